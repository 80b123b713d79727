package main

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// passTracker knows, for a read from the log start, when every partition has reached the end
// offset it had when the read began.
type passTracker struct {
	topic      string
	start, end map[int32]int64
	next       map[int32]int64
}

func newPassTracker(ctx context.Context, cl *kgo.Client, topic string) (*passTracker, error) {
	partitions, err := partitionsOf(ctx, cl, topic)
	if err != nil {
		return nil, err
	}
	t := &passTracker{topic: topic, next: map[int32]int64{}}
	if t.start, err = listOffsets(ctx, cl, topic, partitions, -2); err != nil {
		return nil, err
	}
	if t.end, err = listOffsets(ctx, cl, topic, partitions, -1); err != nil {
		return nil, err
	}
	for p, o := range t.start {
		t.next[p] = o
	}
	return t, nil
}

func (t *passTracker) saw(partition int32, offset int64) {
	if offset+1 > t.next[partition] {
		t.next[partition] = offset + 1
	}
}

func (t *passTracker) done() bool {
	for p, end := range t.end {
		if t.next[p] < end {
			return false
		}
	}
	return true
}

// restart seeks every partition back to its log start for another pass.
func (t *passTracker) restart(cl *kgo.Client) {
	seek := map[int32]kgo.EpochOffset{}
	for p, o := range t.start {
		t.next[p] = o
		seek[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{t.topic: seek})
}

func partitionsOf(ctx context.Context, cl *kgo.Client, topic string) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 {
		return nil, fmt.Errorf("metadata for %s: %d topics in the answer", topic, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return nil, fmt.Errorf("metadata for %s: %w", topic, err)
	}
	var out []int32
	for _, p := range resp.Topics[0].Partitions {
		out = append(out, p.Partition)
	}
	return out, nil
}

// listOffsets asks ListOffsets for every partition: timestamp -2 is the log start, -1 the end.
func listOffsets(ctx context.Context, cl *kgo.Client, topic string, partitions []int32, timestamp int64) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = timestamp
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("ListOffsets %s-%d: %w", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	if len(out) != len(partitions) {
		return nil, fmt.Errorf("ListOffsets %s: %d of %d partitions answered", topic, len(out), len(partitions))
	}
	return out, nil
}
