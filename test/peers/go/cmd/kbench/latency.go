package main

import (
	"context"
	"flag"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// latency produces at a fixed rate and reports each record's ack latency. A record's latency
// counts from when the schedule said to send it, not from when the loop got to it, so a stall
// shows up in the figures instead of silently lowering the rate (coordinated omission).
func latency(args []string) result {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	c := commonFlags(fs)
	p := producerFlags(fs, 0, 100)
	rate := fs.Int("rate", 10000, "records per second")
	duration := fs.Duration("duration", 10*time.Second, "how long to produce")
	warmup := fs.Duration("warmup", time.Second, "leading part of the run left out of the percentiles")
	fs.Parse(args)
	c.check("latency")
	r := result{Topic: c.topic, Settings: p.describe()}
	r.Settings["rate"] = *rate
	r.Settings["warmupSeconds"] = warmup.Seconds()

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

	total := int(duration.Seconds() * float64(*rate))
	interval := time.Second / time.Duration(*rate)
	var errs errorList
	var wg sync.WaitGroup
	lat := make([]time.Duration, total)
	wg.Add(total)
	start := time.Now()
	for i := 0; i < total; {
		due := min(int(time.Since(start)/interval)+1, total)
		for ; i < due; i++ {
			n, key, v := i, keys.key(i), p.valueOf(i, value)
			intended := start.Add(time.Duration(i) * interval)
			cl.Produce(ctx, &kgo.Record{Key: key, Value: v}, func(_ *kgo.Record, err error) {
				lat[n] = time.Since(intended)
				if err != nil {
					errs.add(err)
				}
				wg.Done()
			})
			r.Bytes += int64(len(key) + len(v))
		}
		// Sleeping between bursts keeps the generator off the CPU the broker and proxy need;
		// records due meanwhile go out together on the next pass, as an application's would.
		time.Sleep(200 * time.Microsecond)
	}
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	r.Records = total
	r.LatencyMs = summarize(lat[min(int(warmup.Seconds()*float64(*rate)), total):])
	r.Errors = errs.list()
	counter.fill(&r)
	return r
}
