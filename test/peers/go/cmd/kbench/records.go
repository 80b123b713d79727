package main

import (
	"fmt"
	"math/rand/v2"
	"sync"
)

// payload builds the record keys and one value shared by every record: kgo only reads a
// record's value, and building a fresh one per record would put the generator's cost into the
// figures. The value is pseudo-random, so no layer finds a pattern inside one record.
func payload(keys, valueSize int) (keySpace [][]byte, value []byte) {
	keySpace = make([][]byte, max(keys, 1))
	for i := range keySpace {
		keySpace[i] = []byte(fmt.Sprintf("key-%08d", i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	value = make([]byte, valueSize)
	for i := range value {
		value[i] = byte(rng.Uint32())
	}
	return keySpace, value
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
