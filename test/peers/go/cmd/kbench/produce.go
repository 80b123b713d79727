package main

import (
	"context"
	"flag"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produce sends --count records as fast as the client allows and reports throughput, with the
// latency of each record from its Produce call (including any wait for buffer space) to its ack.
func produce(args []string) result {
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	c := commonFlags(fs)
	p := producerFlags(fs, 5*time.Millisecond, 1024)
	count := fs.Int("count", 1000000, "records to produce")
	fs.Parse(args)
	c.check("produce")
	r := result{Topic: c.topic, Settings: p.describe()}

	var counter requestCounter
	cl, err := kgo.NewClient(p.options(c, &counter)...)
	if err != nil {
		r.Errors = []string{err.Error()}
		return r
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	keys, value := p.keySource(), payload(p.valueSize)
	if err := warmUp(ctx, cl, keys.first(), value); err != nil {
		r.Errors = []string{"warm-up record: " + err.Error()}
		return r
	}

	var errs errorList
	var wg sync.WaitGroup
	lat := make([]time.Duration, *count)
	wg.Add(*count)
	start := time.Now()
	for i := range *count {
		key, v := keys.key(i), p.valueOf(i, value)
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Key: key, Value: v}, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(sent)
			if err != nil {
				errs.add(err)
			}
			wg.Done()
		})
		r.Bytes += int64(len(key) + len(v))
	}
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	r.Records = *count
	r.LatencyMs = summarize(lat)
	r.Errors = errs.list()
	counter.fill(&r)
	return r
}
