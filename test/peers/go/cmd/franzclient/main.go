// Command franzclient drives franz-go's kgo client (the strictest reader of rewritten batches:
// it checks CRCs and exact record counts) for tests, printing one JSON summary on stdout in the
// format described in test/peers/README.md. It exits 1 when the summary holds errors.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const usage = `usage: franzclient produce|consume|share|txn|configs --brokers HOST:PORT[,...] --topic T [flags]
       franzclient tail --brokers HOST:PORT[,...] --topic T --until-key K [flags] (JSON events, no summary)
       franzclient version
run "franzclient <command> -h" for the flags`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if os.Args[1] == "tail" {
		os.Exit(tail(os.Args[2:]))
	}
	var out map[string]any
	switch os.Args[1] {
	case "produce":
		out = produce(os.Args[2:])
	case "consume":
		out = consume(os.Args[2:])
	case "share":
		out = share(os.Args[2:])
	case "txn":
		out = txn(os.Args[2:])
	case "configs":
		out = configs(os.Args[2:])
	case "version":
		out = version()
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	line, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "franzclient:", err)
		os.Exit(1)
	}
	fmt.Println(string(line))
	if errs, _ := out["errors"].([]string); len(errs) > 0 {
		fmt.Fprintln(os.Stderr, "franzclient:", strings.Join(errs, "; "))
		os.Exit(1)
	}
}

func seeds(brokers string) kgo.Opt {
	return kgo.SeedBrokers(strings.Split(brokers, ",")...)
}

func compression(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown compression %q (none, gzip, snappy, lz4, zstd)", name)
}

func timeout(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }
