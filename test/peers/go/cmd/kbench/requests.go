package main

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// requestCounter counts the Produce and Fetch requests a client writes, so a run shows how many
// records each request carried: the proxy's cost is per request far more than per byte.
type requestCounter struct {
	produce, fetch atomic.Int64
}

func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	switch key {
	case 0:
		c.produce.Add(1)
	case 1:
		c.fetch.Add(1)
	}
}

func (c *requestCounter) report() map[string]int64 {
	return map[string]int64{"produce": c.produce.Load(), "fetch": c.fetch.Load()}
}
