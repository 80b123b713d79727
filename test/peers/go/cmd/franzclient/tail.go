package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tail is the reader of a soak test (issue 33): it reads one partition from its start, says when
// it has seen the record at the high watermark it asked for at start minus one ("caughtUp", the
// bootstrap-to-the-end pattern), then waits at the end of the partition until a record with
// --until-key arrives. It prints one JSON event per line as things happen (test/peers/README.md,
// "Tail readers") instead of a summary, and exits 0 on "done", 1 on "timeout".
func tail(args []string) int {
	fs := flag.NewFlagSet("tail", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic")
	partition := fs.Int("partition", 0, "the partition to read")
	mode := fs.String("mode", "assign", "assign (no group) or group (subscribe, commit)")
	group := fs.String("group", "", "the group of --mode group (a fresh one by default)")
	share := fs.String("share", "", "read in this share group instead (KIP-932), accepting every record")
	isolation := fs.String("isolation", "read_uncommitted", "read_uncommitted or read_committed (a share group's share.isolation.level)")
	untilKey := fs.String("until-key", "", "stop at the first record with this key (required)")
	timeoutMs := fs.Int("timeout-ms", 60000, "overall deadline")
	fs.Parse(args)
	if *brokers == "" || *topic == "" || *untilKey == "" || (*mode != "assign" && *mode != "group") {
		fmt.Fprintln(os.Stderr, "tail: --brokers, --topic and --until-key are required; --mode is assign or group")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()
	t := &tailer{out: json.NewEncoder(os.Stdout), started: time.Now(), topic: *topic, partition: int32(*partition), untilKey: *untilKey}
	isoLevel := int8(0)
	if *isolation == "read_committed" {
		isoLevel = 1
	}

	opts := []kgo.Opt{seeds(*brokers), kgo.FetchMaxWait(500 * time.Millisecond)}
	switch {
	case *share != "":
		admin, err := kgo.NewClient(seeds(*brokers))
		if err != nil {
			return t.fail(err)
		}
		defer admin.Close()
		groupConfigs := keyValues{"share.auto.offset.reset": "earliest", "share.isolation.level": *isolation}
		if err := incrementalSet(ctx, admin, configResourceTypeGroup, *share, groupConfigs); err != nil {
			return t.fail(err)
		}
		opts = append(opts, kgo.ShareGroup(*share), kgo.ConsumeTopics(*topic))
	case *mode == "assign":
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: {int32(*partition): kgo.NewOffset().AtStart()}}))
	default:
		g := *group
		if g == "" {
			g = "franz-tail-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		}
		// Committed after each poll that brought records, so a commit error is seen where it happens.
		opts = append(opts, kgo.ConsumeTopics(*topic), kgo.ConsumerGroup(g), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	}
	// A share group's isolation is its share.isolation.level, set above.
	if isoLevel == 1 && *share == "" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return t.fail(err)
	}
	defer cl.Close()

	high, err := endOffset(ctx, cl, *topic, int32(*partition), isoLevel)
	if err != nil {
		return t.fail(err)
	}
	t.begin(high)
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.emit(map[string]any{"event": "timeout"})
			return 1
		}
		fetches.EachError(func(tp string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.emit(map[string]any{"event": "error", "message": fmt.Sprintf("%s-%d: %v", tp, p, err)})
			}
		})
		var done *kgo.Record
		got := false
		fetches.EachRecord(func(r *kgo.Record) {
			if *share != "" {
				r.Ack(kgo.AckAccept)
			}
			if r.Topic != *topic || r.Partition != int32(*partition) || done != nil {
				return
			}
			got = true
			if t.record(r.Offset, r.Key, r.Value) {
				done = r
			}
		})
		switch {
		case *share != "":
			// Acknowledgements ride on the next poll; flushed here so a failing one is reported now.
			if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
				t.emit(map[string]any{"event": "error", "message": "acknowledging: " + err.Error()})
			}
		case *mode == "group" && got:
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				t.emit(map[string]any{"event": "error", "message": "commit: " + err.Error()})
			}
		}
		if done != nil {
			t.emit(map[string]any{"event": "done", "offset": done.Offset})
			return 0
		}
	}
}

// tailer prints the events of a tail run and keeps what caughtUp reports.
type tailer struct {
	out       *json.Encoder
	started   time.Time
	topic     string
	partition int32
	untilKey  string
	high      int64
	caughtUp  bool
	records   int
}

// emit prints one event; os.Stdout is unbuffered, so each line is out as soon as it is written.
func (t *tailer) emit(event map[string]any) {
	if err := t.out.Encode(event); err != nil {
		fmt.Fprintln(os.Stderr, "franzclient tail:", err)
	}
}

func (t *tailer) fail(err error) int {
	t.emit(map[string]any{"event": "error", "message": err.Error()})
	return 1
}

func (t *tailer) begin(high int64) {
	t.high = high
	t.emit(map[string]any{"event": "start", "highWatermark": high})
	if high == 0 {
		t.caughtUp = true
		t.emit(map[string]any{"event": "caughtUp", "offset": -1, "records": 0, "ms": time.Since(t.started).Milliseconds()})
	}
}

// record prints a record (and caughtUp once it reaches the start's high watermark - 1); true when it has the until key.
func (t *tailer) record(offset int64, key, value []byte) bool {
	t.records++
	t.emit(map[string]any{"event": "record", "offset": offset, "key": text(key), "value": text(value)})
	if !t.caughtUp && offset >= t.high-1 {
		t.caughtUp = true
		t.emit(map[string]any{"event": "caughtUp", "offset": offset, "records": t.records, "ms": time.Since(t.started).Milliseconds()})
	}
	return key != nil && string(key) == t.untilKey
}

// endOffset is ListOffsets LATEST of one partition at the isolation level (what kadm's
// ListEndOffsets asks, which this module does not depend on): the high watermark, or the last
// stable offset under read_committed. kgo sends it to the partition's leader.
func endOffset(ctx context.Context, cl *kgo.Client, topic string, partition int32, isolation int8) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("ListOffsets of %s-%d: %w", topic, partition, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("ListOffsets of %s-%d: unexpected answer shape", topic, partition)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return 0, fmt.Errorf("ListOffsets of %s-%d: %w", topic, partition, err)
	}
	return p.Offset, nil
}
