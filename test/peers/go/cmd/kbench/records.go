package main

import (
	"fmt"
	"math/rand/v2"
	"sync"
)

// keySource hands out record keys "key-%08d" from a key space of --keys keys starting at
// --key-base: cycled (every key in turn) or drawn uniformly at random with a fixed seed, so two
// runs with the same flags write the same keys in the same order (the compaction bench writes
// one sequence to several topics and compares how they read back).
type keySource struct {
	table []byte // keys back to back, prebuilt when the space is small: kgo only reads them
	width int
	keys  int
	base  int
	rng   *rand.Rand // nil: cycle
}

// A bigger key space is formatted per record instead: 10M prebuilt keys would cost the
// generator hundreds of MB.
const prebuiltKeys = 1 << 20

func newKeySource(keys, base int, random bool, seed uint64) *keySource {
	k := &keySource{keys: max(keys, 1), base: base}
	if random {
		k.rng = rand.New(rand.NewPCG(seed, 0x6b636f6d70616374))
	}
	if k.keys <= prebuiltKeys && len(format(base)) == len(format(base+k.keys-1)) {
		k.width = len(format(base + k.keys - 1))
		k.table = make([]byte, 0, k.keys*k.width)
		for i := range k.keys {
			k.table = append(k.table, format(base+i)...)
		}
	}
	return k
}

func format(n int) []byte { return fmt.Appendf(nil, "key-%08d", n) }

// first is the first key of the space, for the warm-up record; it draws nothing from the seed.
func (k *keySource) first() []byte { return format(k.base) }

// key is the key of the i-th record written.
func (k *keySource) key(i int) []byte {
	n := i % k.keys
	if k.rng != nil {
		n = k.rng.IntN(k.keys)
	}
	if k.table == nil {
		return format(k.base + n)
	}
	at := n * k.width
	return k.table[at : at+k.width : at+k.width]
}

// payload is the value every record carries: kgo only reads a record's value, and building a
// fresh one per record would put the generator's cost into the figures. It is pseudo-random, so
// no layer finds a pattern inside one record.
func payload(valueSize int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte(rng.Uint32())
	}
	return value
}

// errorList collects errors from producer callbacks, keeping the first few and a count, so a
// failing run of a million records does not print a million lines.
type errorList struct {
	mu    sync.Mutex
	first []string
	total int
}

const keptErrors = 5

func (e *errorList) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total++
	if len(e.first) < keptErrors {
		e.first = append(e.first, err.Error())
	}
}

func (e *errorList) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := append([]string{}, e.first...)
	if e.total > len(e.first) {
		out = append(out, fmt.Sprintf("and %d more errors", e.total-len(e.first)))
	}
	return out
}
