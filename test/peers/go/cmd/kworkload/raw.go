package main

import (
	"context"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// rawClient sends hand-built requests at versions that address topics by name: Produce up to
// v11 (record errors and error messages exist from v8) and Fetch up to v12 (v13 uses topic ids).
func rawClient(brokers string) (*kgo.Client, error) {
	v := kversion.Stable()
	v.SetMaxKeyVersion(0, 11)
	v.SetMaxKeyVersion(1, 12)
	return kgo.NewClient(seeds(brokers), kgo.MaxVersions(v))
}

// rawLeader is a rawClient with partition 0's leader found; the caller closes the client.
func rawLeader(ctx context.Context, brokers, topic string) (*kgo.Client, *kgo.Broker, error) {
	cl, err := rawClient(brokers)
	if err != nil {
		return nil, nil, err
	}
	leader, err := leaderOf(ctx, cl, topic)
	if err != nil {
		cl.Close()
		return nil, nil, err
	}
	return cl, leader, nil
}

// leaderOf finds partition 0's leader. kgo takes the brokers from any Metadata answer it
// carries, so the returned handle can be used at once.
func leaderOf(ctx context.Context, cl *kgo.Client, topic string) (*kgo.Broker, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return nil, fmt.Errorf("metadata for %s: %w", topic, err)
		}
		for _, p := range rt.Partitions {
			if p.Partition == 0 {
				return cl.Broker(int(p.Leader)), nil
			}
		}
	}
	return nil, fmt.Errorf("metadata for %s: no partition 0", topic)
}

// fetchAt sends one Fetch for partition 0 at offset (isolation 1: read_committed, which also
// lists the aborted transactions) and returns the partition's answer, its errors checked.
func fetchAt(ctx context.Context, leader *kgo.Broker, topic string, offset int64, isolation int8) (*kmsg.FetchResponseTopicPartition, error) {
	return fetchUpTo(ctx, leader, topic, offset, isolation, 4<<20)
}

// fetchUpTo is fetchAt with the partition's byte limit given: at 1 the store answers one batch
// (the first is always whole, KIP-74), so each batch of a stretch costs a fetch.
func fetchUpTo(ctx context.Context, leader *kgo.Broker, topic string, offset int64, isolation int8, partitionMaxBytes int32) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MinBytes = 1
	req.MaxBytes = 8 << 20
	req.SessionEpoch = -1
	req.IsolationLevel = isolation
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = 0
	p.FetchOffset = offset
	p.PartitionMaxBytes = partitionMaxBytes
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := leader.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
		return nil, err
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("fetch at %d: unexpected answer shape", offset)
	}
	rp := &fr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return nil, fmt.Errorf("fetch at %d: %w", offset, err)
	}
	return rp, nil
}

// encodeBatch builds an uncompressed, non-idempotent v2 record batch.
func encodeBatch(records []kmsg.Record) []byte {
	var body []byte
	for i := range records {
		r := records[i]
		r.OffsetDelta = int32(i)
		r.Length = 0
		probe := r.AppendTo(nil)
		r.Length = int32(len(probe) - 1) // the zero length took one varint byte
		body = r.AppendTo(body)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(records) - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(records)),
		Records:              body,
	}
	b.Length = int32(49 + len(body))
	out := b.AppendTo(nil)
	// The CRC-32C covers everything from the attributes (byte 21) on.
	crc := crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli))
	out[17], out[18], out[19], out[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return out
}
