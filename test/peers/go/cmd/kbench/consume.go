package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consume reads a topic from its start, without a group, as fast as the client allows: --count
// records; or, with --to-end, every partition up to the end offsets listed when it starts; or,
// with --duration, for that long, starting over from the log start each time it has reached
// those ends (the background reader of the compaction bench; SIGTERM or SIGINT ends it early
// and it still reports). With --group it reads as a member of that consumer group (offsets
// committed by kgo's autocommit) from the group's position, or the log start for a new group;
// --topic may then list several topics, comma-separated, and --duration tails them for that
// long instead of starting over (the soak of the scale bench). Fetch sizes stay at kgo's
// defaults, which equal Java's (fetch.max.bytes 50 MiB, max.partition.fetch.bytes 1 MiB). The
// clock includes the client's connect and first metadata, a few milliseconds against a run of
// seconds. --count-keys also reports how many distinct keys (per topic) were read, which a
// compacted read must equal to the records read.
//
// --to-end and --duration know a partition has reached its end when they see the record just
// below the end offset. The last record of a log always survives compaction (it is the latest
// of its key), unless it is a tombstone or a transaction marker, which the bench never ends on.
func consume(args []string) result {
	fs := flag.NewFlagSet("consume", flag.ExitOnError)
	c := commonFlags(fs)
	count := fs.Int("count", 1000000, "records to read")
	toEnd := fs.Bool("to-end", false, "read every partition to its end offset at the start, instead of --count records")
	duration := fs.Duration("duration", 0, "read for this long, starting over at the end (tailing, with --group), instead of --count records")
	group := fs.String("group", "", "consume as a member of this consumer group; --topic may list several topics, comma-separated")
	countKeys := fs.Bool("count-keys", false, "also report the distinct keys read (held in memory: for test-sized topics)")
	fs.Parse(args)
	c.check("consume")
	if *toEnd && *duration > 0 {
		fmt.Fprintln(os.Stderr, "consume: --to-end and --duration exclude each other")
		os.Exit(2)
	}
	topics := strings.Split(c.topic, ",")
	if len(topics) > 1 && (*group == "" || *toEnd) {
		fmt.Fprintln(os.Stderr, "consume: several topics need --group, and exclude --to-end")
		os.Exit(2)
	}
	r := result{Topic: c.topic, Settings: map[string]any{"client": "franz-go", "fetchMaxBytes": 50 << 20, "fetchMaxPartitionBytes": 1 << 20}}

	var counter requestCounter
	opts := append(c.clientOpts(&counter), kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if *group != "" {
		opts = append(opts, kgo.ConsumerGroup(*group))
		r.Settings["group"] = *group
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		r.Errors = []string{err.Error()}
		return r
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	stop, unhook := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer unhook()

	start := time.Now()
	var ends *passTracker
	tailing := *group != "" && *duration > 0
	if *toEnd || (*duration > 0 && !tailing) {
		if ends, err = newPassTracker(ctx, cl, c.topic); err != nil {
			r.Errors = []string{err.Error()}
			return r
		}
	}
	if *duration > 0 {
		var endRun context.CancelFunc
		stop, endRun = context.WithTimeout(stop, *duration)
		defer endRun()
	}
	passes := 0
	var keys map[string]struct{}
	if *countKeys {
		keys = map[string]struct{}{}
	}
	for {
		if ends == nil && !tailing && r.Records >= *count {
			break
		}
		if ends != nil && ends.done() {
			passes++
			if *toEnd {
				break
			}
			ends.restart(cl)
		}
		fetches := cl.PollFetches(stop)
		if ctx.Err() != nil {
			r.Errors = append(r.Errors, fmt.Sprintf("read %d records, short of the end, before the deadline", r.Records))
			break
		}
		if stop.Err() != nil {
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				r.Errors = append(r.Errors, fmt.Sprintf("%s-%d: %v", t, p, err))
			}
		})
		if len(r.Errors) > 0 {
			break
		}
		fetches.EachRecord(func(rec *kgo.Record) {
			r.Records++
			r.Bytes += int64(len(rec.Key) + len(rec.Value))
			if keys != nil {
				keys[rec.Topic+"\x00"+string(rec.Key)] = struct{}{}
			}
			if ends != nil {
				ends.saw(rec.Partition, rec.Offset)
			}
		})
	}
	r.Seconds = time.Since(start).Seconds()
	counter.fill(&r)
	counter.fillFirstFetch(&r, start)
	if ends != nil {
		r.Settings["passes"] = passes
	}
	if keys != nil {
		n := len(keys)
		r.DistinctKeys = &n
	}
	return r
}
