package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func consume(args []string) map[string]any {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic")
	count := fs.Int("count", 0, "records expected; stop once seen (required)")
	group := fs.String("group", "", "consumer group (commits its offsets); empty: no group")
	isolation := fs.String("isolation", "read_uncommitted", "read_uncommitted or read_committed")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline: fewer than --count records by then is an error")
	idleMs := fs.Int("idle-ms", 0, "once a record has been read, also stop after this long without another (0: only --count or the deadline)")
	withRecords := fs.Bool("records", false, "also list every record (partition, offset, key, value)")
	partitionBytes := fs.Int("fetch-max-partition-bytes", 1<<20, "largest answer per partition and fetch (kgo's default 1 MiB)")
	fs.Parse(args)
	if *brokers == "" || *topic == "" || *count <= 0 {
		fmt.Fprintln(os.Stderr, "consume: --brokers, --topic and a positive --count are required")
		os.Exit(2)
	}
	opts := []kgo.Opt{
		seeds(*brokers),
		kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.FetchMaxPartitionBytes(int32(*partitionBytes)),
	}
	if *isolation == "read_committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if *group != "" {
		opts = append(opts, kgo.ConsumerGroup(*group), kgo.DisableAutoCommit())
	}
	errs := []string{}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return map[string]any{"errors": append(errs, err.Error())}
	}
	defer cl.Close()
	// kgo validates every fetched batch's CRC unless DisableFetchCRCValidation is set; report
	// the live option so a test can assert the strict path really ran.
	crcValidation := !cl.OptValue(kgo.DisableFetchCRCValidation).(bool)

	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()
	var recs []seen
	idle := time.Duration(*idleMs) * time.Millisecond
	var lastAt time.Time
	for len(recs) < *count {
		// The idle bound starts with the first record: joining and the first fetch may be slow.
		pollCtx, cancelPoll := ctx, context.CancelFunc(func() {})
		if idle > 0 && len(recs) > 0 {
			pollCtx, cancelPoll = context.WithDeadline(ctx, lastAt.Add(idle))
		}
		fetches := cl.PollFetches(pollCtx)
		expired := pollCtx.Err() != nil
		cancelPoll()
		if expired {
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				errs = append(errs, fmt.Sprintf("%s-%d: %v", t, p, err))
			}
		})
		if len(errs) > 0 {
			break
		}
		fetches.EachRecord(func(r *kgo.Record) {
			recs = append(recs, seen{partition: r.Partition, offset: r.Offset, key: r.Key, value: r.Value})
			lastAt = time.Now()
		})
	}
	if len(recs) < *count && len(errs) == 0 {
		errs = append(errs, fmt.Sprintf("saw %d of %d records before the deadline", len(recs), *count))
	}
	if len(recs) > *count {
		errs = append(errs, fmt.Sprintf("saw %d records, expected %d", len(recs), *count))
	}
	if *group != "" && len(errs) == 0 {
		commitCtx, cancelCommit := context.WithTimeout(context.Background(), 10*time.Second)
		if err := cl.CommitUncommittedOffsets(commitCtx); err != nil {
			errs = append(errs, "commit: "+err.Error())
		}
		cancelCommit()
	}
	parts, dupErrs := summarize(recs)
	errs = append(errs, dupErrs...)
	sort.Strings(errs)
	out := map[string]any{"count": len(recs), "partitions": parts, "errors": errs,
		"client": map[string]any{"name": "franz-go", "crcValidation": crcValidation}}
	if *withRecords {
		out["records"] = listRecords(recs)
	}
	return out
}
