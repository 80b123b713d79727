package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consume reads --count records from the start of a topic, without a group, as fast as the
// client allows. Fetch sizes stay at kgo's defaults, which equal Java's (fetch.max.bytes 50 MiB,
// max.partition.fetch.bytes 1 MiB). The clock includes the client's connect and first metadata,
// a few milliseconds against a run of seconds.
func consume(args []string) result {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	c := commonFlags(fs)
	count := fs.Int("count", 1000000, "records to read")
	fs.Parse(args)
	c.check("consume")
	r := result{Topic: c.topic, Settings: map[string]any{"client": "franz-go", "fetchMaxBytes": 50 << 20, "fetchMaxPartitionBytes": 1 << 20}}

	var counter requestCounter
	cl, err := kgo.NewClient(append(c.clientOpts(&counter), kgo.ConsumeTopics(c.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		r.Errors = []string{err.Error()}
		return r
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()

	start := time.Now()
	for r.Records < *count {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			r.Errors = append(r.Errors, fmt.Sprintf("read %d of %d records before the deadline", r.Records, *count))
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				r.Errors = append(r.Errors, fmt.Sprintf("%s-%d: %v", t, p, err))
			}
		})
		if len(r.Errors) > 0 {
			break
		}
		fetches.EachRecord(func(rec *kgo.Record) {
			r.Records++
			r.Bytes += int64(len(rec.Key) + len(rec.Value))
		})
	}
	r.Seconds = time.Since(start).Seconds()
	r.Requests = counter.report()
	return r
}
