package main

import (
	"encoding/hex"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordOut is a record as the harness compares it. Bytes are shown as text when they are
// printable ASCII, else as "hex:<hex>"; null stays null, so a tombstone, an empty value and a
// missing key all differ. Header keys are strings on the wire and are shown as they are.
type recordOut struct {
	Offset  int64       `json:"offset"`
	Key     *string     `json:"key"`
	Value   *string     `json:"value"`
	Headers [][]*string `json:"headers"`
}

func show(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	printable := !strings.HasPrefix(s, "hex:")
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			printable = false
			break
		}
	}
	if !printable {
		s = "hex:" + hex.EncodeToString(b)
	}
	return &s
}

func showHeaders(hs []kgo.RecordHeader) [][]*string {
	out := make([][]*string, len(hs))
	for i, h := range hs {
		k := h.Key
		out[i] = []*string{&k, show(h.Value)}
	}
	return out
}

func toRecordOut(offset int64, key, value []byte, headers []kgo.RecordHeader) recordOut {
	return recordOut{Offset: offset, Key: show(key), Value: show(value), Headers: showHeaders(headers)}
}
