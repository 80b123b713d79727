package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type partitionOffsets struct {
	LogStart      int64 `json:"logStart"`
	HighWatermark int64 `json:"highWatermark"`
	LastStable    int64 `json:"lastStable"`
}

// listOffset asks ListOffsets for partition 0: timestamp -2 is the log start, -1 the end
// (the high watermark under read_uncommitted, the last stable offset under read_committed).
func listOffset(ctx context.Context, cl *kgo.Client, topic string, timestamp int64, isolation int8) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = 0
	p.Timestamp = timestamp
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("ListOffsets for %s-0: unexpected answer shape", topic)
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return 0, fmt.Errorf("ListOffsets for %s-0: %w", topic, err)
	}
	return rp.Offset, nil
}

func offsetsOf(ctx context.Context, cl *kgo.Client, topic string) (partitionOffsets, error) {
	var o partitionOffsets
	var err error
	if o.LogStart, err = listOffset(ctx, cl, topic, -2, 0); err != nil {
		return o, err
	}
	if o.HighWatermark, err = listOffset(ctx, cl, topic, -1, 0); err != nil {
		return o, err
	}
	o.LastStable, err = listOffset(ctx, cl, topic, -1, 1)
	return o, err
}

// waitForEnd polls until both the high watermark and the last stable offset are at want: after
// a commit or abort the coordinator writes the marker asynchronously, and the next step must
// not land before it or the offsets would differ between targets.
func waitForEnd(ctx context.Context, cl *kgo.Client, topic string, want int64) error {
	var last partitionOffsets
	var lastErr error
	for {
		o, err := offsetsOf(ctx, cl, topic)
		if err == nil && o.HighWatermark == want && o.LastStable == want {
			return nil
		}
		last, lastErr = o, err
		if err == nil && o.HighWatermark > want {
			return fmt.Errorf("%s-0 ends at %d, past the expected %d: another writer or a shifted layout", topic, o.HighWatermark, want)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s-0 did not reach offset %d (high watermark %d, last stable %d, last error %v)", topic, want, last.HighWatermark, last.LastStable, lastErr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// endOnceReady returns partition 0's end offset, retrying while a topic just created has no
// leader yet.
func endOnceReady(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	for {
		end, err := listOffset(ctx, cl, topic, -1, 0)
		if err == nil {
			return end, nil
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}
