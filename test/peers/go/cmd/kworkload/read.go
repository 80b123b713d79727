package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type readOut struct {
	Records []recordOut `json:"records"`
	// ReachedEnd: the reader's position got to the end offset. A log need not end with a
	// record a client sees (a carried partition ends with kcompact's own records, gaps to a
	// client), so this is judged by position, not by the offset of the last record read.
	ReachedEnd bool `json:"reachedEnd"`
}

// read reads partition 0 from offset 0 with a kgo consumer (which checks CRCs and exact record
// counts and reports records at their original offsets) under both isolation levels, then lists
// the batches themselves with raw Fetch requests, where markers and empty batches show.
func read(args []string) map[string]any {
	fs := flag.NewFlagSet("read", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic (partition 0)")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline for the whole read")
	idleMs := fs.Int("idle-ms", 3000, "give up a consumer read after this long without a new record")
	fs.Parse(args)
	required("read", *brokers, *topic)
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()

	admin, err := kgo.NewClient(seeds(*brokers))
	if err != nil {
		return failed(err)
	}
	defer admin.Close()
	offsets, err := offsetsOf(ctx, admin, *topic)
	if err != nil {
		return failed(err)
	}
	errs := []string{}
	uncommitted, e := consumeAll(ctx, *brokers, *topic, false, offsets.HighWatermark, timeout(*idleMs))
	errs = append(errs, e...)
	committed, e := consumeAll(ctx, *brokers, *topic, true, offsets.LastStable, timeout(*idleMs))
	errs = append(errs, e...)
	batches, aborted, err := listBatches(ctx, *brokers, *topic, offsets.LastStable)
	if err != nil {
		errs = append(errs, "batches: "+err.Error())
	}
	tail, err := tailsNearEnd(ctx, *brokers, *topic, uncommitted.Records, committed.Records, offsets)
	if err != nil {
		errs = append(errs, "tail readers: "+err.Error())
	}
	// The comparison assumes one state of the log; a writer or a retention pass during the
	// read would make its parts disagree.
	if again, err := offsetsOf(ctx, admin, *topic); err != nil {
		errs = append(errs, err.Error())
	} else if again != offsets {
		errs = append(errs, fmt.Sprintf("the log changed during the read: %+v then %+v", offsets, again))
	}
	return map[string]any{
		"offsets":             offsets,
		"uncommitted":         uncommitted,
		"committed":           committed,
		"batches":             batches,
		"abortedTransactions": aborted,
		"tail":                tail,
		"errors":              errs,
	}
}

func consumeAll(ctx context.Context, brokers, topic string, readCommitted bool, end int64, idle time.Duration) (readOut, []string) {
	out := readOut{Records: []recordOut{}}
	if end == 0 {
		out.ReachedEnd = true
		return out, nil
	}
	opts := []kgo.Opt{
		seeds(brokers),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	isolation := "read_uncommitted"
	if readCommitted {
		isolation = "read_committed"
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return out, []string{err.Error()}
	}
	defer cl.Close()
	var errs []string
	last := int64(-1)
	progress := time.Now()
	var tail *kgo.Broker
	for ctx.Err() == nil && len(errs) == 0 {
		if last >= end-1 {
			out.ReachedEnd = true
			break
		}
		pollCtx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Sprintf("%s: %s-%d: %v", isolation, t, p, err))
			}
		})
		n := 0
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				errs = append(errs, fmt.Sprintf("%s: offset %d delivered after %d", isolation, r.Offset, last))
			}
			out.Records = append(out.Records, toRecordOut(r.Offset, r.Key, r.Value, r.Headers))
			last = r.Offset
			n++
		})
		if n > 0 {
			progress = time.Now()
			continue
		}
		// kgo keeps its fetch position to itself, so a quiet poll asks whether one at last+1
		// would move, through what is left, to the end without a record to hand out.
		if tail == nil {
			raw, leader, err := rawLeader(ctx, brokers, topic)
			if err != nil {
				errs = append(errs, err.Error())
				break
			}
			defer raw.Close()
			tail = leader
		}
		done, err := nothingBefore(ctx, tail, topic, readCommitted, last+1, end)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: past offset %d: %v", isolation, last, err))
		}
		if done {
			out.ReachedEnd = true
			break
		}
		if time.Since(progress) > idle {
			break
		}
	}
	return out, errs
}

// nothingBefore says whether a reader at offset from gets to end without a record to return,
// by kgo's own processing of raw Fetch answers (ProcessFetchPartition, which its consumer
// uses to move its position past empty batches, markers and aborted data).
func nothingBefore(ctx context.Context, leader *kgo.Broker, topic string, readCommitted bool, from, end int64) (bool, error) {
	level, isolation := int8(0), kgo.ReadUncommitted()
	if readCommitted {
		level, isolation = 1, kgo.ReadCommitted()
	}
	for offset := from; offset < end; {
		rp, err := fetchAt(ctx, leader, topic, offset, level)
		if err != nil {
			return false, err
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: offset, IsolationLevel: isolation, Topic: topic}, rp, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			return false, fp.Err
		}
		if len(fp.Records) > 0 || next <= offset {
			return false, nil
		}
		offset = next
	}
	return true, nil
}
