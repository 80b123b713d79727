package main

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// requestCounter counts the Produce and Fetch requests a client writes, so a run shows how many
// records each request carried: the proxy's cost is per request far more than per byte. It also
// counts the record batches produced or fetched, which shows how a log was batched (and, through
// the compaction proxy, how many batches a compacted read still returns).
type requestCounter struct {
	produce, fetch atomic.Int64
	batches        atomic.Int64
	// firstFetch is when the first Fetch was written (Unix nanoseconds): a reader's connections,
	// metadata and ListOffsets come before it.
	firstFetch atomic.Int64
}

func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch key {
	case 0:
		c.produce.Add(1)
	case 1:
		if c.fetch.Add(1) == 1 {
			c.firstFetch.Store(time.Now().UnixNano())
		}
	}
}

func (c *requestCounter) OnProduceBatchWritten(kgo.BrokerMetadata, string, int32, kgo.ProduceBatchMetrics) {
	c.batches.Add(1)
}

func (c *requestCounter) OnFetchBatchRead(kgo.BrokerMetadata, string, int32, kgo.FetchBatchMetrics) {
	c.batches.Add(1)
}

// fill puts the counts into a run's result.
func (c *requestCounter) fill(r *result) {
	r.Requests = map[string]int64{"produce": c.produce.Load(), "fetch": c.fetch.Load()}
	r.Batches = c.batches.Load()
}

// fillFirstFetch reports when the first Fetch was written, in milliseconds after start.
func (c *requestCounter) fillFirstFetch(r *result, start time.Time) {
	if at := c.firstFetch.Load(); at > 0 {
		ms := float64(at-start.UnixNano()) / 1e6
		r.FirstFetchMs = &ms
	}
}
