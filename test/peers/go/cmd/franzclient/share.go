package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's GROUP config resource (KIP-848), which kmsg names no constant for.
const configResourceTypeGroup kmsg.ConfigResourceType = 32

// share reads a topic in a share group (KIP-932): it sets the group's share.auto.offset.reset
// to earliest and its share.isolation.level, then polls until --count records were accepted
// and none came for --idle-ms, acknowledging each record: AckAccept, or AckRelease at its first
// delivery with --release (the group delivers it again). Then it closes the member and reports
// each delivery with its delivery count, and the group's start offset and lag of partition 0.
func share(args []string) map[string]any {
	fs := flag.NewFlagSet("share", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "share group (required)")
	count := fs.Int("count", 0, "records to accept (required)")
	isolation := fs.String("isolation", "read_uncommitted", "the group's share.isolation.level")
	release := fs.Bool("release", false, "release each record at its first delivery")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline: fewer than --count records accepted by then is an error")
	idleMs := fs.Int("idle-ms", 0, "once --count records were accepted, go on until none came for this long")
	fs.Parse(args)
	if *brokers == "" || *topic == "" || *group == "" || *count <= 0 {
		fmt.Fprintln(os.Stderr, "share: --brokers, --topic, --group and a positive --count are required")
		os.Exit(2)
	}
	client := map[string]any{"name": "franz-go"}
	fail := func(err error) map[string]any {
		return map[string]any{"errors": []string{err.Error()}, "client": client}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()

	admin, err := kgo.NewClient(seeds(*brokers))
	if err != nil {
		return fail(err)
	}
	defer admin.Close()
	groupConfigs := keyValues{"share.auto.offset.reset": "earliest", "share.isolation.level": *isolation}
	if err := incrementalSet(ctx, admin, configResourceTypeGroup, *group, groupConfigs); err != nil {
		return fail(err)
	}

	cl, err := kgo.NewClient(seeds(*brokers), kgo.ShareGroup(*group), kgo.ConsumeTopics(*topic), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return fail(err)
	}
	errs := []string{}
	deliveries := []map[string]any{}
	accepted := 0
	idle := time.Duration(*idleMs) * time.Millisecond
	lastAt := time.Now()
	for ctx.Err() == nil && (accepted < *count || time.Since(lastAt) < idle) {
		pollCtx, cancelPoll := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := cl.PollFetches(pollCtx)
		cancelPoll()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Sprintf("%s-%d: %v", t, p, err))
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			again := *release && r.DeliveryCount() == 1
			deliveries = append(deliveries, map[string]any{
				"partition": r.Partition, "offset": r.Offset, "key": text(r.Key), "value": text(r.Value), "deliveryCount": r.DeliveryCount(),
			})
			if again {
				r.Ack(kgo.AckRelease)
			} else {
				r.Ack(kgo.AckAccept)
				accepted++
			}
			lastAt = time.Now()
		})
		if len(errs) > 0 {
			break
		}
	}
	flushCtx, cancelFlush := context.WithTimeout(context.Background(), 10*time.Second)
	if err := cl.FlushAcks(flushCtx); err != nil {
		errs = append(errs, "flushing acknowledgements: "+err.Error())
	}
	cancelFlush()
	cl.Close()
	if accepted < *count && len(errs) == 0 {
		errs = append(errs, fmt.Sprintf("accepted %d of %d records before the deadline", accepted, *count))
	}
	startOffset, lag, err := shareOffsets(context.Background(), admin, *group, *topic)
	if err != nil {
		errs = append(errs, err.Error())
	}
	sort.SliceStable(deliveries, func(a, b int) bool { return deliveries[a]["offset"].(int64) < deliveries[b]["offset"].(int64) })
	return map[string]any{"records": deliveries, "startOffset": startOffset, "lag": lag, "errors": errs, "client": client}
}

// shareOffsets is DescribeShareGroupOffsets of partition 0: the group's start offset and lag.
func shareOffsets(ctx context.Context, cl *kgo.Client, group, topic string) (int64, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	t.Topic = topic
	t.Partitions = []int32{0}
	g.Topics = append(g.Topics, t)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, -1, fmt.Errorf("describe share group offsets of %s: %w", group, err)
	}
	for _, rg := range resp.Groups {
		if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
			return -1, -1, fmt.Errorf("describe share group offsets of %s: %w", group, err)
		}
		for _, rt := range rg.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return -1, -1, fmt.Errorf("describe share group offsets of %s: %w", group, err)
				}
				return rp.StartOffset, rp.Lag, nil
			}
		}
	}
	return -1, -1, nil
}
