package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// genRecord is the shared test-record generator (test/peers/README.md): every client in the
// bed produces the same bytes for the same index, so runs are comparable across clients.
func genRecord(i, keys, valueSize, tombstoneEvery int) (key, value []byte) {
	if keys > 0 {
		key = []byte(fmt.Sprintf("key-%06d", i%keys))
	}
	if tombstoneEvery > 0 && (i+1)%tombstoneEvery == 0 {
		return key, nil
	}
	v := []byte("value-" + strconv.Itoa(i) + "-")
	for j := len(v); j < valueSize; j++ {
		v = append(v, byte('a'+(i+j)%26))
	}
	return key, v[:valueSize]
}

type seen struct {
	partition int32
	offset    int64
	key       []byte
	value     []byte
}

type partitionSummary struct {
	Count       int     `json:"count"`
	FirstOffset int64   `json:"firstOffset"`
	LastOffset  int64   `json:"lastOffset"`
	Offsets     []int64 `json:"offsets"`
	Digest      string  `json:"digest"`
}

type recordOut struct {
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
}

// summarize builds the comparable per-partition view: records in offset order, and a SHA-256
// over (offset, key, value) with lengths so that null, empty and shifted bytes all differ.
func summarize(recs []seen) (map[string]*partitionSummary, []string) {
	byPart := map[int32][]seen{}
	for _, r := range recs {
		byPart[r.partition] = append(byPart[r.partition], r)
	}
	var errs []string
	out := map[string]*partitionSummary{}
	for p, rs := range byPart {
		sort.SliceStable(rs, func(a, b int) bool { return rs[a].offset < rs[b].offset })
		h := sha256.New()
		ps := &partitionSummary{Count: len(rs), FirstOffset: rs[0].offset, LastOffset: rs[len(rs)-1].offset}
		for i, r := range rs {
			if i > 0 && r.offset == rs[i-1].offset {
				errs = append(errs, fmt.Sprintf("partition %d: offset %d delivered twice", p, r.offset))
			}
			ps.Offsets = append(ps.Offsets, r.offset)
			h.Write(binary.BigEndian.AppendUint64(nil, uint64(r.offset)))
			writeBytes(h, r.key)
			writeBytes(h, r.value)
		}
		ps.Digest = hex.EncodeToString(h.Sum(nil))
		out[strconv.Itoa(int(p))] = ps
	}
	return out, errs
}

func writeBytes(h interface{ Write([]byte) (int, error) }, b []byte) {
	if b == nil {
		h.Write(binary.BigEndian.AppendUint32(nil, 0xffffffff))
		return
	}
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
	h.Write(b)
}

func listRecords(recs []seen) []recordOut {
	out := make([]recordOut, 0, len(recs))
	for _, r := range recs {
		out = append(out, recordOut{Partition: r.partition, Offset: r.offset, Key: text(r.key), Value: text(r.value)})
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Partition != out[b].Partition {
			return out[a].Partition < out[b].Partition
		}
		return out[a].Offset < out[b].Offset
	})
	return out
}

func text(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	if !utf8.ValidString(s) {
		s = "hex:" + hex.EncodeToString(b)
	}
	return &s
}
