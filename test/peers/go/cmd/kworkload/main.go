// Command kworkload writes and reads the seeded workloads of the differential compaction test
// (test/support/differential.ts): the same seed gives every target the same records in the same
// batches and transactions, hence the same offsets, so the compacted logs can be compared
// offset by offset. Each mode prints one JSON line on stdout and exits 1 when its "errors" list
// is not empty.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const usage = `usage: kworkload MODE --brokers HOST:PORT[,...] --topic T [flags]
modes:
  write    the seeded workload (--seed, --steps, --keys, --max-batch, --max-value-bytes)
  append   one keyed record (--key, --value-bytes), e.g. to roll the active segment
  keyless  records without a key, plain and in compressed batches, and the errors they get
  read     partition 0 from offset 0 to the end, read_uncommitted and read_committed, and its batches
  carried  where kcompact's carry records sit in a store's partition 0, read from the store itself
  tail     readers starting at each offset of [--from, --to): the fetches each takes to the end
run "kworkload MODE -h" for the flags of a mode`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var out map[string]any
	switch os.Args[1] {
	case "write":
		out = write(os.Args[2:])
	case "append":
		out = appendOne(os.Args[2:])
	case "keyless":
		out = keyless(os.Args[2:])
	case "read":
		out = read(os.Args[2:])
	case "carried":
		out = carried(os.Args[2:])
	case "tail":
		out = tail(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	line, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kworkload:", err)
		os.Exit(1)
	}
	fmt.Println(string(line))
	if errs, _ := out["errors"].([]string); len(errs) > 0 {
		fmt.Fprintln(os.Stderr, "kworkload:", strings.Join(errs, "; "))
		os.Exit(1)
	}
}

func seeds(brokers string) kgo.Opt {
	return kgo.SeedBrokers(strings.Split(brokers, ",")...)
}

func timeout(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// required exits with usage status when a required flag (--brokers, --topic, a mode's own) is empty.
func required(mode string, values ...string) {
	for _, v := range values {
		if v == "" {
			fmt.Fprintf(os.Stderr, "%s: a required flag is missing; see kworkload %s -h\n", mode, mode)
			os.Exit(2)
		}
	}
}

func failed(err error) map[string]any {
	return map[string]any{"errors": []string{err.Error()}}
}
