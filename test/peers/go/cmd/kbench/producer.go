package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producerSettings are the knobs shared by the produce and latency modes. acks=all and
// idempotence on are the defaults of both Java's producer (since 3.0) and kgo; with idempotence
// kgo keeps up to 5 produce requests in flight per broker, as Java does. Batches are never
// compressed (Java's default; kgo's is snappy): every record carries the same value, which a
// compressor would squeeze to almost nothing.
type producerSettings struct {
	linger     time.Duration
	batchBytes int
	idempotent bool
	keys       int
	keyBase    int
	keyOrder   string
	seed       uint64
	valueSize  int
	tombstones int
}

func producerFlags(fs *flag.FlagSet, linger time.Duration, valueSize int) *producerSettings {
	p := &producerSettings{}
	fs.DurationVar(&p.linger, "linger", linger, "producer linger (Java's linger.ms)")
	fs.IntVar(&p.batchBytes, "batch-bytes", 1<<20, "largest record batch (Java's batch.size)")
	fs.BoolVar(&p.idempotent, "idempotent", true, "idempotent producer (Java's enable.idempotence)")
	fs.IntVar(&p.keys, "keys", 100000, "distinct keys")
	fs.IntVar(&p.keyBase, "key-base", 0, "number of the first key (keys are key-<base> to key-<base+keys-1>)")
	fs.StringVar(&p.keyOrder, "key-order", "cycle", "cycle: every key in turn; random: uniformly at random (seeded)")
	fs.Uint64Var(&p.seed, "seed", 1, "seed of --key-order random")
	fs.IntVar(&p.valueSize, "value-size", valueSize, "value bytes")
	fs.IntVar(&p.tombstones, "tombstone-every", 0, "every Nth record is a tombstone (null value); 0: none")
	return p
}

// keySource checks the key flags; main has parsed them by now.
func (p *producerSettings) keySource() *keySource {
	if p.keyOrder != "cycle" && p.keyOrder != "random" {
		fmt.Fprintf(os.Stderr, "--key-order must be cycle or random, got %q\n", p.keyOrder)
		os.Exit(2)
	}
	return newKeySource(p.keys, p.keyBase, p.keyOrder == "random", p.seed)
}

// valueOf is the value of the i-th record written: the payload, or nil for a tombstone.
func (p *producerSettings) valueOf(i int, payload []byte) []byte {
	if p.tombstones > 0 && i%p.tombstones == p.tombstones-1 {
		return nil
	}
	return payload
}

func (p *producerSettings) options(c *common, counter *requestCounter) []kgo.Opt {
	opts := append(c.clientOpts(counter),
		kgo.DefaultProduceTopic(c.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(p.linger),
		kgo.ProducerBatchMaxBytes(int32(p.batchBytes)),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if !p.idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts
}

func (p *producerSettings) describe() map[string]any {
	return map[string]any{"client": "franz-go", "acks": "all", "idempotent": p.idempotent, "compression": "none",
		"lingerMs": float64(p.linger) / 1e6, "batchBytes": p.batchBytes, "keys": p.keys, "keyBase": p.keyBase, "keyOrder": p.keyOrder, "seed": p.seed, "valueSize": p.valueSize, "tombstoneEvery": p.tombstones}
}

// warmUp sends one record and waits for it, so connections, metadata and the producer id are in
// place before the clock starts: a run measures steady producing, not client start-up.
func warmUp(ctx context.Context, cl *kgo.Client, key, value []byte) error {
	return cl.ProduceSync(ctx, &kgo.Record{Key: key, Value: value}).FirstErr()
}
