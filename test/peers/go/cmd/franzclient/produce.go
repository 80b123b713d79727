package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type producedPartition struct {
	Count       int   `json:"count"`
	FirstOffset int64 `json:"firstOffset"`
	LastOffset  int64 `json:"lastOffset"`
}

func produce(args []string) map[string]any {
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic")
	count := fs.Int("count", 100, "records to produce")
	start := fs.Int("start", 0, "index of the first record (later rounds overwrite keys with new values)")
	keys := fs.Int("keys", 10, "distinct keys, cycled; 0 for keyless records")
	valueSize := fs.Int("value-size", 32, "value bytes")
	tombstoneEvery := fs.Int("tombstone-every", 0, "every Nth record gets a null value (0: never)")
	codec := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	partitions := fs.Int("create-partitions", 0, "create the topic with this many partitions first (0: rely on auto-creation)")
	topicConfigs := keyValues{}
	fs.Var(topicConfigs, "topic-config", "k=v topic config for --create-partitions (repeatable)")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline for the whole run")
	fs.Parse(args)
	if *brokers == "" || *topic == "" {
		fmt.Fprintln(os.Stderr, "produce: --brokers and --topic are required")
		os.Exit(2)
	}
	errs := []string{}
	c, err := compression(*codec)
	if err != nil {
		return map[string]any{"errors": append(errs, err.Error())}
	}
	cl, err := kgo.NewClient(seeds(*brokers), kgo.DefaultProduceTopic(*topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(c), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return map[string]any{"errors": append(errs, err.Error())}
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()

	if *partitions > 0 {
		if err := createTopic(ctx, cl, *topic, *partitions, topicConfigs); err != nil {
			return map[string]any{"errors": append(errs, err.Error())}
		}
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	parts := map[int32]*producedPartition{}
	for i := *start; i < *start+*count; i++ {
		k, v := genRecord(i, *keys, *valueSize, *tombstoneEvery)
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Key: k, Value: v}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			p := parts[r.Partition]
			if p == nil {
				p = &producedPartition{FirstOffset: r.Offset, LastOffset: r.Offset}
				parts[r.Partition] = p
			}
			p.Count++
			p.FirstOffset = min(p.FirstOffset, r.Offset)
			p.LastOffset = max(p.LastOffset, r.Offset)
		})
	}
	wg.Wait()
	total := 0
	out := map[string]*producedPartition{}
	for p, s := range parts {
		total += s.Count
		out[strconv.Itoa(int(p))] = s
	}
	sort.Strings(errs)
	return map[string]any{"count": total, "partitions": out, "errors": errs,
		"client": map[string]any{"name": "franz-go", "compression": *codec}}
}

func createTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int, configs keyValues) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = topic
	t.NumPartitions = int32(partitions)
	t.ReplicationFactor = -1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = k
		c.Value = &v
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		// 36 TOPIC_ALREADY_EXISTS: reruns against the same upstream keep working.
		if rt.ErrorCode != 0 && rt.ErrorCode != 36 {
			msg := ""
			if rt.ErrorMessage != nil {
				msg = *rt.ErrorMessage
			}
			return fmt.Errorf("create topic %s: error code %d %s", topic, rt.ErrorCode, msg)
		}
	}
	return nil
}

// keyValues is a repeatable k=v flag; values may hold commas (cleanup.policy=compact,delete).
type keyValues map[string]string

func (kv keyValues) String() string { return "" }

func (kv keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("expected key=value, got %q", s)
	}
	kv[k] = v
	return nil
}
