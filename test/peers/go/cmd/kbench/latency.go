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
//
// With --e2e (the default) a consumer in the same process, on its own client and connections to
// the same bootstrap, reads the topic from the end offsets listed before the warm-up record, and
// each record's end-to-end latency counts from the same scheduled send time to the return of the
// poll that delivered it. The record carries its sequence number in a header (e2e.go), so both
// ends use one monotonic clock; Kafka's record timestamp only has milliseconds.
func latency(args []string) result {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	c := commonFlags(fs)
	p := producerFlags(fs, 0, 100)
	rate := fs.Int("rate", 10000, "records per second")
	duration := fs.Duration("duration", 10*time.Second, "how long to produce")
	warmup := fs.Duration("warmup", time.Second, "leading part of the run left out of the percentiles")
	e2e := fs.Bool("e2e", true, "also read the records back and report end-to-end latency")
	drain := fs.Duration("drain", 5*time.Second, "with --e2e, how long after the last ack the reader may take to receive the rest")
	fs.Parse(args)
	c.check("latency")
	r := result{Topic: c.topic, Settings: p.describe()}
	r.Settings["rate"] = *rate
	r.Settings["warmupSeconds"] = warmup.Seconds()
	r.Settings["e2e"] = *e2e

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
	total := int(duration.Seconds() * float64(*rate))
	interval := time.Second / time.Duration(*rate)
	skip := min(int(warmup.Seconds()*float64(*rate)), total)

	var reader *e2eReader
	if *e2e {
		r.Settings["drainSeconds"] = drain.Seconds()
		if reader, err = startE2EReader(ctx, c, cl, total); err != nil {
			r.Errors = []string{"end-to-end reader: " + err.Error()}
			return r
		}
		defer reader.close()
	}
	if err := warmUp(ctx, cl, keys.first(), value); err != nil {
		r.Errors = []string{"warm-up record: " + err.Error()}
		return r
	}
	// The reader's first fetch pays for its connection and metadata; waiting for it to see the
	// warm-up record keeps that out of the first records' end-to-end figures.
	if reader != nil {
		if err := reader.waitWarm(ctx); err != nil {
			r.Errors = []string{"end-to-end reader, warm-up record: " + err.Error()}
			return r
		}
	}

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
			rec := &kgo.Record{Key: key, Value: v}
			if reader != nil {
				rec.Headers = sequenceHeader(i)
			}
			cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
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
	r.LatencyMs = summarize(lat[skip:])
	r.Errors = errs.list()
	counter.fill(&r)
	if reader != nil {
		got, err := reader.finish(ctx, *drain)
		if err != nil {
			r.Errors = append(r.Errors, "end-to-end reader: "+err.Error())
		}
		r.E2EMs = summarize(got.latencies(start, interval, skip))
		r.Received = &got.received
		missing := total - got.received
		r.Missing = &missing
		r.Requests["fetch"] = got.fetches
	}
	return r
}
