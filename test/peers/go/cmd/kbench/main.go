// Command kbench is the load generator of `make bench` (bench/proxy-throughput.ts) and
// `make bench-compaction` (bench/compaction.ts): a fast franz-go client, so the client is not
// what limits the figures, run once per round against an upstream directly or through the proxy. Each run prints one JSON line on stdout:
//
//	{"mode","topic","records","bytes","seconds","mbPerSec","recordsPerSec","latencyMs"?,"e2eMs"?,"received"?,"missing"?,
//	 "requests","batches","distinctKeys"?,"settings","errors"}
//
// where bytes counts key plus value bytes, MB is 10^6 bytes, latencyMs holds avg, p50, p90,
// p99, p999 and max of the per-record produce acknowledgement latency, e2eMs the same of the
// latency mode's end-to-end latency, over the records its reader received (received of records;
// missing had not arrived when it stopped), and requests counts the Produce and Fetch requests
// the clients wrote (warm-up included), batches the record batches the run produced or (consume)
// fetched. It exits 1 when errors is not empty.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const usage = `usage: kbench produce|consume|latency --brokers HOST:PORT[,...] --topic T [flags]
run "kbench MODE -h" for the flags of a mode`

type result struct {
	Mode          string           `json:"mode"`
	Topic         string           `json:"topic"`
	Records       int              `json:"records"`
	Bytes         int64            `json:"bytes"`
	Seconds       float64          `json:"seconds"`
	MBPerSec      float64          `json:"mbPerSec"`
	RecordsPerSec float64          `json:"recordsPerSec"`
	LatencyMs     *percentiles     `json:"latencyMs,omitempty"`
	E2EMs         *percentiles     `json:"e2eMs,omitempty"`
	Received      *int             `json:"received,omitempty"`
	Missing       *int             `json:"missing,omitempty"`
	Requests      map[string]int64 `json:"requests"`
	Batches       int64            `json:"batches"`
	FirstFetchMs  *float64         `json:"firstFetchMs,omitempty"` // consume: its first Fetch, after the start of its clock
	DistinctKeys  *int             `json:"distinctKeys,omitempty"`
	Settings      map[string]any   `json:"settings"`
	Errors        []string         `json:"errors"`
}

// common holds the flags every mode takes.
type common struct {
	brokers string
	topic   string
	timeout time.Duration
}

func commonFlags(fs *flag.FlagSet) *common {
	c := &common{}
	fs.StringVar(&c.brokers, "brokers", "", "bootstrap HOST:PORT[,...] (required)")
	fs.StringVar(&c.topic, "topic", "", "topic (required)")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "deadline for the whole run")
	return c
}

func (c *common) check(mode string) {
	if c.brokers == "" || c.topic == "" {
		fmt.Fprintf(os.Stderr, "%s: --brokers and --topic are required\n", mode)
		os.Exit(2)
	}
}

// clientOpts are the options every mode's client starts from.
func (c *common) clientOpts(counter *requestCounter) []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(strings.Split(c.brokers, ",")...), kgo.WithHooks(counter)}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var r result
	switch os.Args[1] {
	case "produce":
		r = produce(os.Args[2:])
	case "consume":
		r = consume(os.Args[2:])
	case "latency":
		r = latency(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	r.Mode = os.Args[1]
	if r.Errors == nil {
		r.Errors = []string{}
	}
	if r.Seconds > 0 {
		r.MBPerSec = float64(r.Bytes) / 1e6 / r.Seconds
		r.RecordsPerSec = float64(r.Records) / r.Seconds
	}
	line, err := json.Marshal(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kbench:", err)
		os.Exit(1)
	}
	fmt.Println(string(line))
	if len(r.Errors) > 0 {
		fmt.Fprintln(os.Stderr, "kbench:", strings.Join(r.Errors, "; "))
		os.Exit(1)
	}
}
