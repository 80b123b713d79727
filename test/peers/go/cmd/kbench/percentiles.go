package main

import (
	"math"
	"slices"
	"time"
)

type percentiles struct {
	Avg  float64 `json:"avg"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// summarize sorts samples in place and returns their mean and nearest-rank percentiles in
// milliseconds.
func summarize(samples []time.Duration) *percentiles {
	if len(samples) == 0 {
		return nil
	}
	slices.Sort(samples)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(samples)))) - 1
		return ms(samples[max(i, 0)])
	}
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return &percentiles{Avg: ms(sum / time.Duration(len(samples))), P50: at(0.50), P90: at(0.90), P99: at(0.99), P999: at(0.999), Max: ms(samples[len(samples)-1])}
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
