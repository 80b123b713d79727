package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type rawProduceOut struct {
	ErrorCode    int16            `json:"errorCode"`
	ErrorName    string           `json:"errorName"`
	ErrorMessage *string          `json:"errorMessage"`
	RecordErrors []recordErrorOut `json:"recordErrors"`
}

type recordErrorOut struct {
	Index   int32   `json:"index"`
	Message *string `json:"message"`
}

// keyless attempts records without a key on partition 0: with kgo once per codec, the keyless
// record in the middle of a batch of keyed, compressible ones (a compacted topic must reject
// the whole batch, compressed or not), and once as a raw Produce v11 so that the error code,
// the record errors and the message can be compared. It reports what each attempt got; that
// they fail is for the caller to judge, and so is the log end staying where it was.
func keyless(args []string) map[string]any {
	fs := flag.NewFlagSet("keyless", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic (partition 0)")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline")
	fs.Parse(args)
	required("keyless", *brokers, *topic)
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()

	admin, err := kgo.NewClient(seeds(*brokers))
	if err != nil {
		return failed(err)
	}
	defer admin.Close()
	before, err := listOffset(ctx, admin, *topic, -1, 0)
	if err != nil {
		return failed(err)
	}
	errs := []string{}
	perCodec := map[string][]*string{}
	for _, codec := range codecs {
		got, err := keylessWithKgo(ctx, *brokers, *topic, codec)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", codec, err))
			continue
		}
		perCodec[codec] = got
	}
	raw, err := keylessRaw(ctx, *brokers, *topic)
	if err != nil {
		errs = append(errs, fmt.Sprintf("raw produce: %v", err))
	}
	after, err := listOffset(ctx, admin, *topic, -1, 0)
	if err != nil {
		errs = append(errs, err.Error())
	}
	return map[string]any{"kgo": perCodec, "raw": raw, "endBefore": before, "endAfter": after, "errors": errs}
}

// keylessWithKgo returns each record's produce error (null when it was written).
func keylessWithKgo(ctx context.Context, brokers, topic, codec string) ([]*string, error) {
	c, err := compression(codec)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(producerOpts(brokers, topic, c)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	filler := strings.Repeat("compressible keyed neighbour ", 8)
	recs := []*kgo.Record{
		{Key: []byte("keyed-1"), Value: []byte(filler)},
		{Key: []byte("keyed-2"), Value: []byte(filler)},
		{Key: nil, Value: []byte("keyless " + filler)},
		{Key: []byte("keyed-3"), Value: []byte(filler)},
	}
	out := make([]*string, len(recs))
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				s := err.Error()
				out[i] = &s
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	wg.Wait()
	return out, nil
}

func keylessRaw(ctx context.Context, brokers, topic string) (*rawProduceOut, error) {
	cl, leader, err := rawLeader(ctx, brokers, topic)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = 0
	p.Records = encodeBatch([]kmsg.Record{
		{Key: []byte("keyed"), Value: []byte("v0")},
		{Key: nil, Value: []byte("v1")},
	})
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := leader.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("produce answer for %s has an unexpected shape", topic)
	}
	rp := pr.Topics[0].Partitions[0]
	out := &rawProduceOut{ErrorCode: rp.ErrorCode, ErrorMessage: rp.ErrorMessage, RecordErrors: []recordErrorOut{}}
	if e := kerr.TypedErrorForCode(rp.ErrorCode); e != nil {
		out.ErrorName = e.Message
	}
	for _, re := range rp.ErrorRecords {
		out.RecordErrors = append(out.RecordErrors, recordErrorOut{Index: re.RelativeOffset, Message: re.ErrorMessage})
	}
	return out, nil
}
