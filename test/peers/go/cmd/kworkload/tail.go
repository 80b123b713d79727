package main

import (
	"context"
	"flag"
	"sort"

	"github.com/twmb/franz-go/pkg/kgo"
)

// tailOut is what a reader starting at one offset near the end of the log needed to get there:
// the fetches (each answering one batch), the records handed out, and whether its position
// reached the end the answers gave (the high watermark, the last stable offset read committed).
type tailOut struct {
	Start      int64 `json:"start"`
	Fetches    int   `json:"fetches"`
	Records    int   `json:"records"`
	ReachedEnd bool  `json:"reachedEnd"`
}

// tailFetchLimit bounds a reader that does not move, which then reports reachedEnd false.
const tailFetchLimit = 50

// tailFrom counts the fetches a reader at start takes to reach the end, one batch per fetch, as
// kgo's consumer moves its position (ProcessFetchPartition).
func tailFrom(ctx context.Context, leader *kgo.Broker, topic string, readCommitted bool, start int64) (tailOut, error) {
	level, isolation := int8(0), kgo.ReadUncommitted()
	if readCommitted {
		level, isolation = 1, kgo.ReadCommitted()
	}
	out := tailOut{Start: start}
	for offset := start; out.Fetches < tailFetchLimit; {
		rp, err := fetchUpTo(ctx, leader, topic, offset, level, 1)
		if err != nil {
			return out, err
		}
		out.Fetches++
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: offset, IsolationLevel: isolation, Topic: topic}, rp, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			return out, fp.Err
		}
		out.Records += len(fp.Records)
		end := rp.HighWatermark
		if readCommitted {
			end = rp.LastStableOffset
		}
		if next >= end {
			out.ReachedEnd = true
			return out, nil
		}
		if next <= offset && len(fp.Records) == 0 {
			return out, nil
		}
		offset = next
	}
	return out, nil
}

// tailStarts are where tail readers start: the last few records a client sees, and the end.
func tailStarts(records []recordOut, end int64) []int64 {
	starts := []int64{end}
	for i := len(records) - 1; i >= 0 && len(starts) < 4; i-- {
		starts = append(starts, records[i].Offset)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	return starts
}

// tails runs a tail reader from each start.
func tails(ctx context.Context, leader *kgo.Broker, topic string, readCommitted bool, starts []int64) ([]tailOut, error) {
	outs := []tailOut{}
	for _, s := range starts {
		t, err := tailFrom(ctx, leader, topic, readCommitted, s)
		if err != nil {
			return outs, err
		}
		outs = append(outs, t)
	}
	return outs, nil
}

// tailsNearEnd runs tail readers from the last records each isolation level saw and its end.
func tailsNearEnd(ctx context.Context, brokers, topic string, uncommitted, committed []recordOut, offsets partitionOffsets) (map[string][]tailOut, error) {
	cl, leader, err := rawLeader(ctx, brokers, topic)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := map[string][]tailOut{}
	if out["uncommitted"], err = tails(ctx, leader, topic, false, tailStarts(uncommitted, offsets.HighWatermark)); err != nil {
		return out, err
	}
	out["committed"], err = tails(ctx, leader, topic, true, tailStarts(committed, offsets.LastStable))
	return out, err
}

// tail runs tail readers from every offset of [from, to) at both isolation levels: through
// kcompact, from inside the run of its own records that may end a store's log.
func tail(args []string) map[string]any {
	fs := flag.NewFlagSet("tail", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic (partition 0)")
	from := fs.Int64("from", 0, "first start offset")
	to := fs.Int64("to", 0, "start offsets below this")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline for every reader together")
	fs.Parse(args)
	required("tail", *brokers, *topic)
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()
	cl, leader, err := rawLeader(ctx, *brokers, *topic)
	if err != nil {
		return failed(err)
	}
	defer cl.Close()
	starts := []int64{}
	for s := *from; s < *to; s++ {
		starts = append(starts, s)
	}
	errs := []string{}
	uncommitted, err := tails(ctx, leader, *topic, false, starts)
	if err != nil {
		errs = append(errs, "read_uncommitted: "+err.Error())
	}
	committed, err := tails(ctx, leader, *topic, true, starts)
	if err != nil {
		errs = append(errs, "read_committed: "+err.Error())
	}
	return map[string]any{"uncommitted": uncommitted, "committed": committed, "errors": errs}
}
