package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchOut is one record batch as a raw Fetch returns it. Producer ids differ between targets,
// so callers compare layouts of one target over time, not across targets.
type batchOut struct {
	Base          int64  `json:"base"`
	Last          int64  `json:"last"`
	Count         int32  `json:"count"`
	Codec         string `json:"codec"`
	Transactional bool   `json:"transactional,omitempty"`
	// Control is "commit" or "abort" for a transaction marker ("empty" for a control batch
	// that lost its record).
	Control       string `json:"control,omitempty"`
	ProducerID    int64  `json:"producerId"`
	DeleteHorizon bool   `json:"deleteHorizon,omitempty"`
	Bytes         int    `json:"bytes"`
}

type abortedOut struct {
	ProducerID  int64 `json:"producerId"`
	FirstOffset int64 `json:"firstOffset"`
}

const (
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// listBatches fetches partition 0 from offset 0 to end batch by batch, read_committed because
// only that isolation level gets the aborted transactions listed (the caller's end is the last
// stable offset, where nothing remains open, so every batch is returned all the same). A
// Fetch that returns no batch while offsets remain below the end is retried a few times, then
// reported: a reader would be stuck there.
func listBatches(ctx context.Context, brokers, topic string, end int64) ([]batchOut, []abortedOut, error) {
	cl, leader, err := rawLeader(ctx, brokers, topic)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	batches := []batchOut{}
	aborted := []abortedOut{}
	seenAborted := map[abortedOut]bool{}
	offset := int64(0)
	for stalls := 0; offset < end; {
		rp, err := fetchAt(ctx, leader, topic, offset, 1)
		if err != nil {
			return batches, aborted, err
		}
		for _, a := range rp.AbortedTransactions {
			k := abortedOut{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
			if !seenAborted[k] {
				seenAborted[k] = true
				aborted = append(aborted, k)
			}
		}
		got, err := parseBatches(rp.RecordBatches)
		if err != nil {
			return batches, aborted, fmt.Errorf("fetch at %d: %w", offset, err)
		}
		progressed := false
		for _, b := range got {
			if b.Last < offset {
				continue
			}
			batches = append(batches, b)
			offset = b.Last + 1
			progressed = true
		}
		if progressed {
			stalls = 0
		} else if stalls++; stalls >= 20 {
			return batches, aborted, fmt.Errorf("no batch at offset %d, below the high watermark %d, after %d fetches", offset, end, stalls)
		}
	}
	return batches, aborted, nil
}

func parseBatches(b []byte) ([]batchOut, error) {
	var out []batchOut
	for len(b) >= 12 {
		size := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if size > len(b) {
			break // a partial batch at the end of a fetch is normal
		}
		raw := b[:size]
		b = b[size:]
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			return out, fmt.Errorf("batch at %d: %w", int64(binary.BigEndian.Uint64(raw)), err)
		}
		if rb.Magic != 2 {
			return out, fmt.Errorf("batch at %d: magic %d", rb.FirstOffset, rb.Magic)
		}
		if crc := crc32.Checksum(raw[21:], castagnoli); int32(crc) != rb.CRC {
			return out, fmt.Errorf("batch at %d: CRC %08x, computed %08x", rb.FirstOffset, uint32(rb.CRC), crc)
		}
		bo := batchOut{
			Base:          rb.FirstOffset,
			Last:          rb.FirstOffset + int64(rb.LastOffsetDelta),
			Count:         rb.NumRecords,
			Codec:         codecs[min(int(rb.Attributes&0x07), len(codecs)-1)],
			Transactional: rb.Attributes&attrTransactional != 0,
			ProducerID:    rb.ProducerID,
			DeleteHorizon: rb.Attributes&attrDeleteHorizon != 0,
			Bytes:         size,
		}
		if rb.Attributes&attrControl != 0 {
			bo.Control = controlType(rb)
		}
		out = append(out, bo)
	}
	return out, nil
}

// controlType reads a marker's key: int16 version, int16 type (0 abort, 1 commit).
func controlType(rb kmsg.RecordBatch) string {
	if rb.NumRecords == 0 {
		return "empty"
	}
	var r kmsg.Record
	if err := r.ReadFrom(rb.Records); err != nil || len(r.Key) < 4 {
		return "unreadable"
	}
	switch binary.BigEndian.Uint16(r.Key[2:4]) {
	case 0:
		return "abort"
	case 1:
		return "commit"
	}
	return "unknown"
}
