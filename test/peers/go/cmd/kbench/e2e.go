package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// seqHeader names the header in which the latency mode's records carry their sequence number
// (8 bytes, big-endian). A header rather than the value's first bytes: the value is one buffer
// shared by every record, and tombstones have none.
const seqHeader = "kbench-seq"

func sequenceHeader(n int) []kgo.RecordHeader {
	return []kgo.RecordHeader{{Key: seqHeader, Value: binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(n))}}
}

// sequenceOf reads sequenceHeader back; ok is false for a record without one (the warm-up
// record) or with a number outside the run.
func sequenceOf(rec *kgo.Record, total int) (n int, ok bool) {
	for _, h := range rec.Headers {
		if h.Key == seqHeader && len(h.Value) == 8 {
			v := binary.BigEndian.Uint64(h.Value)
			return int(v), v < uint64(total)
		}
	}
	return 0, false
}

// e2eReader is the latency mode's consumer. Its goroutine alone touches the fields below done
// until done is closed.
type e2eReader struct {
	cl      *kgo.Client
	counter requestCounter
	base    time.Time
	stop    context.CancelFunc
	warm    chan struct{} // closed when the warm-up record arrives
	all     chan struct{} // closed when every record of the run has arrived
	done    chan struct{} // closed when the goroutine has returned
	got     e2eReceipts
	err     error
}

type e2eReceipts struct {
	// at is, per sequence number, when the record arrived, as time since the reader's base; 0
	// until then (the clock has moved on by the time any record can arrive).
	at       []time.Duration
	base     time.Time
	received int
	fetches  int64
}

// startE2EReader lists the topic's end offsets through the producer's client and starts a
// consumer at them, so it sees the warm-up record and everything after, and nothing older.
func startE2EReader(ctx context.Context, c *common, producer *kgo.Client, total int) (*e2eReader, error) {
	partitions, err := partitionsOf(ctx, producer, c.topic)
	if err != nil {
		return nil, err
	}
	ends, err := listOffsets(ctx, producer, c.topic, partitions, -1)
	if err != nil {
		return nil, err
	}
	at := map[int32]kgo.Offset{}
	for p, o := range ends {
		at[p] = kgo.NewOffset().At(o)
	}
	e := &e2eReader{warm: make(chan struct{}), all: make(chan struct{}), done: make(chan struct{})}
	e.cl, err = kgo.NewClient(append(c.clientOpts(&e.counter), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: at}))...)
	if err != nil {
		return nil, err
	}
	e.base = time.Now()
	e.got = e2eReceipts{at: make([]time.Duration, total), base: e.base}
	var poll context.Context
	poll, e.stop = context.WithCancel(ctx)
	go e.run(poll)
	return e, nil
}

func (e *e2eReader) run(ctx context.Context) {
	defer close(e.done)
	warmed := false
	for !warmed || e.got.received < len(e.got.at) {
		fetches := e.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		// Records of one fetch arrived together; one clock reading charges none of them for the
		// loop's work on the others.
		now := time.Since(e.base)
		fetches.EachError(func(t string, p int32, err error) {
			if e.err == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				e.err = fmt.Errorf("%s-%d: %w", t, p, err)
			}
		})
		if e.err != nil {
			return
		}
		fetches.EachRecord(func(rec *kgo.Record) {
			n, ok := sequenceOf(rec, len(e.got.at))
			if !ok {
				if !warmed {
					warmed = true
					close(e.warm)
				}
				return
			}
			// A retried produce without idempotence can deliver a record twice; the first counts.
			if e.got.at[n] == 0 {
				e.got.at[n] = now
				e.got.received++
			}
		})
	}
	close(e.all)
}

func (e *e2eReader) waitWarm(ctx context.Context) error {
	select {
	case <-e.warm:
		return nil
	case <-e.done:
		if e.err != nil {
			return e.err
		}
		return errors.New("stopped before the warm-up record arrived")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finish waits up to drain for the records still on their way, then stops the reader. Records
// that have not arrived by then stay 0 in the receipts and are counted as missing by the caller.
func (e *e2eReader) finish(ctx context.Context, drain time.Duration) (e2eReceipts, error) {
	timer := time.NewTimer(drain)
	defer timer.Stop()
	select {
	case <-e.all:
	case <-e.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	e.stop()
	<-e.done
	e.got.fetches = e.counter.fetch.Load()
	return e.got, e.err
}

func (e *e2eReader) close() {
	e.stop()
	<-e.done
	e.cl.Close()
}

// latencies are the end-to-end latencies of the records received, from the same scheduled send
// times the ack latencies count from, leaving out the first skip records as those do.
func (g e2eReceipts) latencies(start time.Time, interval time.Duration, skip int) []time.Duration {
	offset := start.Sub(g.base)
	var out []time.Duration
	for n := skip; n < len(g.at); n++ {
		if g.at[n] != 0 {
			out = append(out, g.at[n]-offset-time.Duration(n)*interval)
		}
	}
	return out
}
