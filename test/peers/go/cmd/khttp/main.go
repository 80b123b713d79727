// Command khttp is the HTTP load generator of `make bench-tables` (bench/tables.ts): GETs over
// kept-alive connections from Go, so the node process under test, not the client, is what
// limits the figures. It runs a warm-up, then --latency GETs one after the other (their p50 and
// p99), then --requests GETs from --connections loops at once (their rate), and prints one JSON
// line on stdout:
//
//	{"latencyMs":{"p50","p99"},"requests","seconds","perSecond","errors"}
//
// In --url, "{i}" becomes (n * 7919) mod --keys for the n-th GET, so the GETs walk the keys in
// a scattered order. Any answer but 200 is an error; it exits 1 when errors is not empty.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type result struct {
	LatencyMs struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"latencyMs"`
	Requests  int      `json:"requests"`
	Seconds   float64  `json:"seconds"`
	PerSecond float64  `json:"perSecond"`
	Errors    []string `json:"errors"`
}

func main() {
	url := flag.String("url", "", `what to GET; "{i}" becomes a key index`)
	keys := flag.Int("keys", 1, `how many key indexes "{i}" walks`)
	warmup := flag.Int("warmup", 1000, "GETs before anything is timed")
	latency := flag.Int("latency", 5000, "GETs timed one after the other")
	requests := flag.Int("requests", 20000, "GETs of the throughput run")
	connections := flag.Int("connections", 16, "concurrent loops (and connections) of the throughput run")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "usage: khttp --url URL [--keys N] [--warmup N] [--latency N] [--requests N] [--connections N]")
		os.Exit(2)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *connections + 1, DisableCompression: true}, Timeout: 30 * time.Second}
	var mu sync.Mutex
	var res result
	res.Errors = []string{}
	fail := func(err string) {
		mu.Lock()
		defer mu.Unlock()
		if len(res.Errors) < 10 {
			res.Errors = append(res.Errors, err)
		}
	}
	var n atomic.Int64
	get := func() {
		i := n.Add(1) - 1
		u := strings.Replace(*url, "{i}", strconv.FormatInt(i*7919%int64(*keys), 10), 1)
		r, err := client.Get(u)
		if err != nil {
			fail(err.Error())
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
		if r.StatusCode != 200 {
			fail(fmt.Sprintf("GET %s answered %d", u, r.StatusCode))
		}
	}
	for i := 0; i < *warmup; i++ {
		get()
	}
	took := make([]float64, *latency)
	for i := range took {
		start := time.Now()
		get()
		took[i] = float64(time.Since(start).Nanoseconds()) / 1e6
	}
	sort.Float64s(took)
	if len(took) > 0 {
		res.LatencyMs.P50 = took[len(took)/2]
		res.LatencyMs.P99 = took[min(len(took)-1, len(took)*99/100)]
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < *connections; c++ {
		share := *requests / *connections
		if c < *requests%*connections {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < share; i++ {
				get()
			}
		}()
	}
	wg.Wait()
	res.Requests = *requests
	res.Seconds = time.Since(start).Seconds()
	res.PerSecond = float64(*requests) / res.Seconds
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if len(res.Errors) > 0 {
		os.Exit(1)
	}
}
