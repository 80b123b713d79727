package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// appendOne writes one uncompressed keyed record. The differential test uses it to roll the
// active segment: its value is large so that the segment it leaves behind is dirty enough for
// min.cleanable.dirty.ratio at the next roll.
func appendOne(args []string) map[string]any {
	fs := flag.NewFlagSet("append", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic (partition 0)")
	key := fs.String("key", "", "record key (required)")
	valueBytes := fs.Int("value-bytes", 64, "value size")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline")
	fs.Parse(args)
	required("append", *brokers, *topic, *key)
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()
	cl, err := kgo.NewClient(producerOpts(*brokers, *topic, kgo.NoCompression())...)
	if err != nil {
		return failed(err)
	}
	defer cl.Close()
	value := []byte(strings.Repeat(*key+" ", *valueBytes/(len(*key)+1)+1)[:*valueBytes])
	rec := &kgo.Record{Key: []byte(*key), Value: value, Partition: 0}
	var produceErr error
	done := make(chan struct{})
	cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
		produceErr = err
		close(done)
	})
	if err := cl.Flush(ctx); err != nil {
		return failed(fmt.Errorf("flush: %w", err))
	}
	<-done
	if produceErr != nil {
		return failed(produceErr)
	}
	return map[string]any{"offset": rec.Offset, "errors": []string{}}
}
