package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The whole workload is drawn from the seed before anything is sent: nothing in it depends on
// timing or on what a target answers, so every target gets the same records in the same steps.

type sizes struct {
	steps         int
	keys          int
	maxBatch      int
	maxValueBytes int
}

type stepKind string

const (
	plainStep  stepKind = "plain"
	commitStep stepKind = "commit"
	abortStep  stepKind = "abort"
)

type plannedRecord struct {
	key     []byte
	value   []byte
	headers []kgo.RecordHeader
}

type plannedStep struct {
	kind    stepKind
	codec   string
	records []plannedRecord
}

var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// Text values are made of words so that the compressing codecs really compress (kgo sends a
// batch uncompressed when compressing would not shrink it).
var words = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa")

var headerKeys = []string{"", "h", "trace-id", "ünïcödé"}

func planWorkload(seed uint64, s sizes) []plannedStep {
	rng := rand.New(rand.NewPCG(seed, 0x6b776f726b6c6f64))
	steps := make([]plannedStep, s.steps)
	for i := range steps {
		st := &steps[i]
		st.codec = codecs[rng.IntN(len(codecs))]
		switch r := rng.IntN(100); {
		case r < 55:
			st.kind = plainStep
		case r < 85:
			st.kind = commitStep
		default:
			st.kind = abortStep
		}
		st.records = make([]plannedRecord, 1+rng.IntN(s.maxBatch))
		for j := range st.records {
			st.records[j] = plannedRecord{key: pickKey(rng, s.keys), value: pickValue(rng, s.maxValueBytes), headers: pickHeaders(rng)}
		}
	}
	return steps
}

// pickKey favours a hot quarter of the key space so that keys see many updates.
func pickKey(rng *rand.Rand, keys int) []byte {
	if rng.IntN(2) == 0 {
		return keyBytes(rng.IntN(max(1, keys/4)))
	}
	return keyBytes(rng.IntN(keys))
}

func keyBytes(i int) []byte {
	switch {
	case i == 0:
		// A zero-length key is a key like any other; only a null key is keyless.
		return []byte{}
	case i%11 == 0:
		// Keys compare by exact bytes, whatever they are.
		return []byte{0x00, 0xff, byte(i), 0x80}
	default:
		return []byte(fmt.Sprintf("key-%03d", i))
	}
}

func pickValue(rng *rand.Rand, maxBytes int) []byte {
	switch r := rng.IntN(100); {
	case r < 12:
		return nil // a tombstone
	case r < 16:
		return []byte{} // an empty value, which is not a tombstone
	}
	var n int
	switch r := rng.IntN(100); {
	case r < 50:
		n = 1 + rng.IntN(32)
	case r < 85:
		n = 33 + rng.IntN(480)
	default:
		n = 513 + rng.IntN(max(1, maxBytes-512))
	}
	n = min(n, maxBytes)
	if rng.IntN(10) == 0 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	return text(rng, n)
}

func text(rng *rand.Rand, n int) []byte {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteByte(' ')
	}
	return []byte(b.String()[:n])
}

func pickHeaders(rng *rand.Rand) []kgo.RecordHeader {
	n := rng.IntN(4)
	if n == 0 {
		return nil
	}
	hs := make([]kgo.RecordHeader, n)
	for i := range hs {
		hs[i].Key = headerKeys[rng.IntN(len(headerKeys))]
		switch r := rng.IntN(100); {
		case r < 25:
			hs[i].Value = nil
		case r < 35:
			hs[i].Value = []byte{}
		case r < 45:
			hs[i].Value = []byte{0xde, 0xad, byte(rng.IntN(256))}
		default:
			hs[i].Value = text(rng, 1+rng.IntN(24))
		}
	}
	return hs
}
