package main

import (
	"context"
	"flag"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

type stepOut struct {
	Kind        stepKind `json:"kind"`
	Codec       string   `json:"codec"`
	Records     int      `json:"records"`
	FirstOffset int64    `json:"firstOffset"`
	LastOffset  int64    `json:"lastOffset"`
	// Marker is the offset of the commit or abort marker of a transactional step.
	Marker *int64 `json:"marker,omitempty"`
}

// writtenRecord is a record as written, with how its step ended: "none" (not transactional),
// "commit" or "abort".
type writtenRecord struct {
	recordOut
	Txn string `json:"txn"`
}

type counts struct {
	Records          int `json:"records"`
	Tombstones       int `json:"tombstones"`
	EmptyKeys        int `json:"emptyKeys"`
	EmptyValues      int `json:"emptyValues"`
	Headers          int `json:"headers"`
	NullHeaderValues int `json:"nullHeaderValues"`
	Committed        int `json:"committedTransactions"`
	Aborted          int `json:"abortedTransactions"`
	ValueBytes       int `json:"valueBytes"`
}

func write(args []string) map[string]any {
	fs := flag.NewFlagSet("write", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic (partition 0 is written; create it first)")
	seed := fs.Uint64("seed", 1, "workload seed")
	var s sizes
	fs.IntVar(&s.steps, "steps", 40, "steps: each one batch, plain or one transaction")
	fs.IntVar(&s.keys, "keys", 30, "distinct keys")
	fs.IntVar(&s.maxBatch, "max-batch", 15, "most records in one step")
	fs.IntVar(&s.maxValueBytes, "max-value-bytes", 4096, "largest value")
	withRecords := fs.Bool("records", false, "also list every record written, with its offset")
	timeoutMs := fs.Int("timeout-ms", 60000, "deadline for the whole run")
	fs.Parse(args)
	required("write", *brokers, *topic)
	if s.steps < 1 || s.keys < 1 || s.maxBatch < 1 || s.maxValueBytes < 1 {
		return failed(fmt.Errorf("--steps, --keys, --max-batch and --max-value-bytes must be positive"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()

	w, err := newWriter(*brokers, *topic)
	if err != nil {
		return failed(err)
	}
	defer w.close()
	start, err := endOnceReady(ctx, w.admin, *topic)
	if err != nil {
		return failed(err)
	}

	plan := planWorkload(*seed, s)
	next := start
	var steps []stepOut
	var written []writtenRecord
	var c counts
	errs := []string{}
	for i, st := range plan {
		offsets, err := w.step(ctx, st)
		if err != nil {
			errs = append(errs, fmt.Sprintf("step %d (%s, %s): %v", i, st.kind, st.codec, err))
			break
		}
		// The layout is the point: the same step must land at the same offsets everywhere.
		for j, o := range offsets {
			if o != next+int64(j) {
				errs = append(errs, fmt.Sprintf("step %d: record %d at offset %d, expected %d", i, j, o, next+int64(j)))
				break
			}
		}
		out := stepOut{Kind: st.kind, Codec: st.codec, Records: len(offsets), FirstOffset: offsets[0], LastOffset: offsets[len(offsets)-1]}
		next += int64(len(offsets))
		txn := "none"
		if st.kind != plainStep {
			txn = string(st.kind)
			marker := next
			out.Marker = &marker
			next++
		}
		if err := waitForEnd(ctx, w.admin, *topic, next); err != nil {
			errs = append(errs, fmt.Sprintf("step %d: %v", i, err))
			break
		}
		steps = append(steps, out)
		c.add(st)
		if *withRecords {
			for j, r := range st.records {
				written = append(written, writtenRecord{toRecordOut(offsets[j], r.key, r.value, r.headers), txn})
			}
		}
	}
	out := map[string]any{"seed": *seed, "steps": steps, "startOffset": start, "endOffset": next, "counts": c, "errors": errs}
	if *withRecords {
		out["records"] = written
	}
	return out
}

func (c *counts) add(st plannedStep) {
	switch st.kind {
	case commitStep:
		c.Committed++
	case abortStep:
		c.Aborted++
	}
	for _, r := range st.records {
		c.Records++
		c.ValueBytes += len(r.value)
		if r.value == nil {
			c.Tombstones++
		} else if len(r.value) == 0 {
			c.EmptyValues++
		}
		if len(r.key) == 0 {
			c.EmptyKeys++
		}
		c.Headers += len(r.headers)
		for _, h := range r.headers {
			if h.Value == nil {
				c.NullHeaderValues++
			}
		}
	}
}

// writer holds one producer per (codec, transactional): compression is a client setting in
// kgo, and a transactional client can only produce inside transactions. Every producer flushes
// by hand, so each step is exactly one batch.
type writer struct {
	brokers string
	topic   string
	admin   *kgo.Client
	clients map[string]*kgo.Client
}

func newWriter(brokers, topic string) (*writer, error) {
	admin, err := kgo.NewClient(seeds(brokers))
	if err != nil {
		return nil, err
	}
	return &writer{brokers: brokers, topic: topic, admin: admin, clients: map[string]*kgo.Client{}}, nil
}

func (w *writer) close() {
	for _, cl := range w.clients {
		cl.Close()
	}
	w.admin.Close()
}

func (w *writer) client(codec string, transactional bool) (*kgo.Client, error) {
	name := fmt.Sprintf("%s/%t", codec, transactional)
	if cl := w.clients[name]; cl != nil {
		return cl, nil
	}
	c, err := compression(codec)
	if err != nil {
		return nil, err
	}
	opts := producerOpts(w.brokers, w.topic, c)
	if transactional {
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("kworkload-%s-%s", w.topic, codec)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	w.clients[name] = cl
	return cl, nil
}

func producerOpts(brokers, topic string, c kgo.CompressionCodec) []kgo.Opt {
	return []kgo.Opt{
		seeds(brokers),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(c),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ManualFlushing(),
	}
}

// step sends one planned step as one batch and returns each record's offset. A transactional
// step's records are flushed into the log before the commit or abort, so an aborted
// transaction really leaves its records there.
func (w *writer) step(ctx context.Context, st plannedStep) ([]int64, error) {
	transactional := st.kind != plainStep
	cl, err := w.client(st.codec, transactional)
	if err != nil {
		return nil, err
	}
	if transactional {
		if err := cl.BeginTransaction(); err != nil {
			return nil, fmt.Errorf("begin transaction: %w", err)
		}
	}
	offsets := make([]int64, len(st.records))
	var mu sync.Mutex
	var produceErr error
	var wg sync.WaitGroup
	for j, r := range st.records {
		wg.Add(1)
		rec := &kgo.Record{Key: r.key, Value: r.value, Headers: r.headers, Partition: 0}
		cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && produceErr == nil {
				produceErr = err
			}
			offsets[j] = rec.Offset
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, fmt.Errorf("flush: %w", err)
	}
	wg.Wait()
	if produceErr != nil {
		return nil, fmt.Errorf("produce: %w", produceErr)
	}
	if transactional {
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(st.kind == commitStep)); err != nil {
			return nil, fmt.Errorf("end transaction (%s): %w", st.kind, err)
		}
	}
	return offsets, nil
}

func compression(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown compression %q (none, gzip, snappy, lz4, zstd)", name)
}
