package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configs creates a topic with --topic-config, then sets --alter with IncrementalAlterConfigs,
// and reports what DescribeConfigs says of those configs after each step.
func configs(args []string) map[string]any {
	fs := flag.NewFlagSet("configs", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic")
	partitions := fs.Int("partitions", 1, "partitions of the new topic")
	create := keyValues{}
	fs.Var(create, "topic-config", "k=v to create the topic with (repeatable)")
	alter := keyValues{}
	fs.Var(alter, "alter", "k=v to set afterwards (repeatable)")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline for the whole run")
	fs.Parse(args)
	if *brokers == "" || *topic == "" {
		fmt.Fprintln(os.Stderr, "configs: --brokers and --topic are required")
		os.Exit(2)
	}
	var shown []string
	for k := range create {
		shown = append(shown, k)
	}
	for k := range alter {
		if _, dup := create[k]; !dup {
			shown = append(shown, k)
		}
	}
	sort.Strings(shown)
	fail := func(err error) map[string]any {
		return map[string]any{"errors": []string{err.Error()}, "client": map[string]any{"name": "franz-go"}}
	}
	cl, err := kgo.NewClient(seeds(*brokers))
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()
	if err := createTopic(ctx, cl, *topic, *partitions, create); err != nil {
		return fail(err)
	}
	created, err := describeTopicConfigs(ctx, cl, *topic, shown)
	if err != nil {
		return fail(err)
	}
	if err := incrementalSet(ctx, cl, kmsg.ConfigResourceTypeTopic, *topic, alter); err != nil {
		return fail(err)
	}
	altered, err := describeTopicConfigs(ctx, cl, *topic, shown)
	if err != nil {
		return fail(err)
	}
	return map[string]any{"api": "IncrementalAlterConfigs", "created": created, "altered": altered, "errors": []string{},
		"client": map[string]any{"name": "franz-go"}}
}

func describeTopicConfigs(ctx context.Context, cl *kgo.Client, topic string, names []string) (map[string]*string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeTopic
	res.ResourceName = topic
	res.ConfigNames = names
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	out := map[string]*string{}
	for _, n := range names {
		out[n] = nil
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, fmt.Errorf("describe configs of %s: %w", topic, err)
		}
		for _, c := range r.Configs {
			if _, asked := out[c.Name]; asked {
				out[c.Name] = c.Value
			}
		}
	}
	return out, nil
}

func incrementalSet(ctx context.Context, cl *kgo.Client, kind kmsg.ConfigResourceType, name string, set keyValues) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kind
	res.ResourceName = name
	for k, v := range set {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = k
		c.Op = kmsg.IncrementalAlterConfigOpSet
		c.Value = &v
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("incremental alter configs of %s: %w", name, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("incremental alter configs of %s: %w", name, err)
		}
	}
	return nil
}
