package main

// --rebatch: kfake serves Fetch answers in batches of its own, as an event store that keeps
// records one by one does (Event Hubs keeps events, not the batches they came in): every v2 data
// batch of a Fetch answer goes out as one batch per record.
//
// kfake has no hook on what it answers, so the listener is wrapped: each connection notes the
// correlation ID and version of every Fetch request it reads, and rewrites the answer to one when
// kfake writes it. kfake handles one request per connection at a time and writes each answer
// whole, in one Write.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net"
	"os"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rebatchListen is a kfake.ListenFn whose connections re-batch Fetch answers.
func rebatchListen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return rebatchListener{ln}, nil
}

type rebatchListener struct{ net.Listener }

func (l rebatchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &rebatchConn{Conn: c, fetches: map[int32]int16{}}, nil
}

type rebatchConn struct {
	net.Conn
	pending []byte // the rest of the request being read

	mu      sync.Mutex
	fetches map[int32]int16 // correlation ID -> version of the Fetch requests not yet answered
}

// Read hands kfake the client's requests, one whole request read ahead, noting each Fetch.
func (c *rebatchConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		var size [4]byte
		if _, err := io.ReadFull(c.Conn, size[:]); err != nil {
			return 0, err
		}
		req := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
		copy(req, size[:])
		if _, err := io.ReadFull(c.Conn, req[4:]); err != nil {
			return 0, err
		}
		// key int16, version int16, correlation ID int32
		if len(req) >= 12 && int16(binary.BigEndian.Uint16(req[4:6])) == int16(kmsg.Fetch) {
			c.mu.Lock()
			c.fetches[int32(binary.BigEndian.Uint32(req[8:12]))] = int16(binary.BigEndian.Uint16(req[6:8]))
			c.mu.Unlock()
		}
		c.pending = req
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// Write passes kfake's answers on, a Fetch answer re-batched.
func (c *rebatchConn) Write(p []byte) (int, error) {
	if len(p) < 8 {
		return c.Conn.Write(p)
	}
	corr := int32(binary.BigEndian.Uint32(p[4:8]))
	c.mu.Lock()
	version, isFetch := c.fetches[corr]
	delete(c.fetches, corr)
	c.mu.Unlock()
	if !isFetch {
		return c.Conn.Write(p)
	}
	out, err := rebatchFetchAnswer(p, version)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake: --rebatch: Fetch answer served as is: %v\n", err)
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rebatchFetchAnswer is a whole Fetch answer frame (size, correlation ID, header tags from v12,
// body) with every partition's batches re-batched.
func rebatchFetchAnswer(frame []byte, version int16) ([]byte, error) {
	head := 8
	if version >= 12 {
		head++ // an empty tagged fields section: kfake writes no header tags
	}
	resp := kmsg.FetchResponse{Version: version}
	if err := resp.ReadFrom(frame[head:]); err != nil {
		return nil, err
	}
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			p := &resp.Topics[ti].Partitions[pi]
			batches, err := rebatch(p.RecordBatches)
			if err != nil {
				return nil, fmt.Errorf("partition %d of %s: %w", p.Partition, resp.Topics[ti].Topic, err)
			}
			p.RecordBatches = batches
		}
	}
	out := resp.AppendTo(append([]byte(nil), frame[:head]...))
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

var (
	decompressor = kgo.DefaultDecompressor()
	castagnoli   = crc32.MakeTable(crc32.Castagnoli)
)

const (
	codecMask     = 0x07
	logAppendTime = 0x08
	controlBatch  = 0x20
)

// rebatch is a partition's batches with each v2 data batch cut into one batch per record. A
// record keeps its offset, timestamp, key, value and headers; its batch keeps the leader epoch,
// timestamp type, producer ID and epoch, and the transactional flag, with the record's own
// sequence. Control batches (one marker record each), batches of the old message formats and a
// cut-off tail go out as they are.
//
// The batches go out uncompressed: a store that keeps events one by one decompressed the batch
// it was given to get at them, and a lone record compresses to about its own size plus the
// codec's framing (gzip's is 18 bytes and more), so it serves events as they are.
//
// kfake chose the batches within the Fetch's byte limits; the answer may come out larger (61
// bytes of batch header per record, decompressed values). Clients take that, as they take a
// first batch larger than the limits.
func rebatch(batches []byte) ([]byte, error) {
	var out []byte
	for len(batches) > 0 {
		if len(batches) < 17 {
			return append(out, batches...), nil
		}
		size := 12 + int(int32(binary.BigEndian.Uint32(batches[8:12])))
		if size < 12 || size > len(batches) {
			return append(out, batches...), nil
		}
		raw := batches[:size]
		batches = batches[size:]
		var b kmsg.RecordBatch
		if raw[16] != 2 {
			out = append(out, raw...)
			continue
		}
		if err := b.ReadFrom(raw); err != nil {
			return nil, err
		}
		if b.Attributes&controlBatch != 0 {
			out = append(out, raw...)
			continue
		}
		records, err := decompressor.Decompress(b.Records, kgo.CompressionCodecType(b.Attributes&codecMask))
		if err != nil {
			return nil, err
		}
		for i := int32(0); i < b.NumRecords; i++ {
			length, n := binary.Varint(records)
			end := n + int(length)
			var r kmsg.Record
			if n <= 0 || length < 0 || end > len(records) || r.ReadFrom(records[:end]) != nil {
				return nil, fmt.Errorf("record %d of the batch at %d does not read", i, b.FirstOffset)
			}
			records = records[end:]
			out = appendSingle(out, &b, r)
		}
	}
	return out, nil
}

// appendSingle appends record r of batch b as a batch of its own.
func appendSingle(out []byte, b *kmsg.RecordBatch, r kmsg.Record) []byte {
	ts := b.FirstTimestamp + r.TimestampDelta64
	if b.Attributes&logAppendTime != 0 {
		ts = b.MaxTimestamp // every record of a LogAppendTime batch has the batch's time
	}
	seq := b.FirstSequence
	if seq >= 0 {
		seq = int32((int64(seq) + int64(r.OffsetDelta)) % (math.MaxInt32 + 1)) // sequences wrap to 0
	}
	single := kmsg.RecordBatch{
		FirstOffset:          b.FirstOffset + int64(r.OffsetDelta),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch,
		Magic:                2,
		Attributes:           b.Attributes &^ codecMask,
		LastOffsetDelta:      0,
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.ProducerEpoch,
		FirstSequence:        seq,
		NumRecords:           1,
	}
	r.TimestampDelta, r.TimestampDelta64, r.OffsetDelta = 0, 0, 0
	r.Length = 0
	r.Length = int32(len(r.AppendTo(nil)) - 1) // everything after the (one-byte, zero) length
	single.Records = r.AppendTo(nil)
	single.Length = int32(49 + len(single.Records)) // from the leader epoch on
	start := len(out)
	out = single.AppendTo(out)
	// The CRC-32C covers everything from the attributes (byte 21) on.
	crc := crc32.Checksum(out[start+21:], castagnoli)
	binary.BigEndian.PutUint32(out[start+17:start+21], crc)
	return out
}
