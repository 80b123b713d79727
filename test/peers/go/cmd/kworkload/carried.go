package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// carryHeader is the first header of every record kcompact writes into a partition it carries
// (docs/carrying.md); the header value's first byte is the record's kind.
const (
	carryHeader    = "kcompact.carry"
	carryPassStart = 2
)

// carried reads a store's partition 0 directly, not through kcompact, from the store's own log
// start to its end, and lists where kcompact's carry records sit: the physical offsets that
// clients of kcompact see as gaps.
func carried(args []string) map[string]any {
	fs := flag.NewFlagSet("carried", flag.ExitOnError)
	brokers := fs.String("brokers", "", "the store's bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic (partition 0)")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline for the whole read")
	fs.Parse(args)
	required("carried", *brokers, *topic)
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()

	cl, leader, err := rawLeader(ctx, *brokers, *topic)
	if err != nil {
		return failed(err)
	}
	defer cl.Close()
	offsets, err := offsetsOf(ctx, cl, *topic)
	if err != nil {
		return failed(err)
	}
	records := []int64{}
	passes := []int64{}
	for offset := offsets.LogStart; offset < offsets.HighWatermark; {
		rp, err := fetchAt(ctx, leader, *topic, offset, 0)
		if err != nil {
			return failed(err)
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: offset, Topic: *topic}, rp, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			return failed(fmt.Errorf("fetch at %d: %w", offset, fp.Err))
		}
		if next <= offset {
			return failed(fmt.Errorf("no progress at offset %d, below the high watermark %d", offset, offsets.HighWatermark))
		}
		for _, r := range fp.Records {
			if len(r.Headers) == 0 || r.Headers[0].Key != carryHeader {
				continue
			}
			records = append(records, r.Offset)
			if len(r.Headers[0].Value) > 0 && r.Headers[0].Value[0] == carryPassStart {
				passes = append(passes, r.Offset)
			}
		}
		offset = next
	}
	return map[string]any{"offsets": offsets, "carried": records, "passes": passes, "errors": []string{}}
}
