package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// abortedMark starts the value of every record of an aborted transaction, as in ck.py txn.
var abortedMark = []byte("aborted-")

// txn is ck.py txn for franz-go: even-numbered transactions commit, odd ones abort (their
// records delivered before the abort, so the log holds them), then a read_committed consume
// must see exactly the committed records.
func txn(args []string) map[string]any {
	fs := flag.NewFlagSet("txn", flag.ExitOnError)
	brokers := fs.String("brokers", "", "bootstrap HOST:PORT[,...]")
	topic := fs.String("topic", "", "topic")
	start := fs.Int("start", 0, "index of the first record")
	keys := fs.Int("keys", 10, "distinct keys, cycled")
	valueSize := fs.Int("value-size", 32, "value bytes")
	transactions := fs.Int("transactions", 4, "transactions; even-numbered ones commit, odd ones abort")
	perTxn := fs.Int("per-txn", 10, "records per transaction")
	txnID := fs.String("transactional-id", "", "transactional id (default: a fresh one)")
	group := fs.String("group", "", "consumer group of the read_committed consume")
	withRecords := fs.Bool("records", false, "also list every record read")
	timeoutMs := fs.Int("timeout-ms", 30000, "deadline for the produce, and again for the consume")
	fs.Parse(args)
	if *brokers == "" || *topic == "" {
		fmt.Fprintln(os.Stderr, "txn: --brokers and --topic are required")
		os.Exit(2)
	}
	id := *txnID
	if id == "" {
		id = "franz-txn-" + strconv.FormatInt(int64(os.Getpid()), 10)
	}
	errs := []string{}
	var errsMu sync.Mutex // produce callbacks run on the client's goroutines
	cl, err := kgo.NewClient(seeds(*brokers), kgo.DefaultProduceTopic(*topic), kgo.TransactionalID(id), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return map[string]any{"errors": append(errs, err.Error())}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout(*timeoutMs))
	defer cancel()
	committed, aborted := 0, 0
	for t := 0; t < *transactions && len(errs) == 0; t++ {
		if err := cl.BeginTransaction(); err != nil {
			errs = append(errs, "begin: "+err.Error())
			break
		}
		for j := 0; j < *perTxn; j++ {
			k, v := genRecord(*start+t**perTxn+j, *keys, *valueSize, 0)
			if t%2 == 1 {
				v = append(append([]byte{}, abortedMark...), v...)
			}
			cl.Produce(ctx, &kgo.Record{Key: k, Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					errsMu.Lock()
					errs = append(errs, err.Error())
					errsMu.Unlock()
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			errs = append(errs, "flush: "+err.Error())
			break
		}
		end, counter := kgo.TryCommit, &committed
		if t%2 == 1 {
			end, counter = kgo.TryAbort, &aborted
		}
		if err := cl.EndTransaction(ctx, end); err != nil {
			errs = append(errs, "end transaction: "+err.Error())
			break
		}
		*counter += *perTxn
	}
	cl.Close()
	if len(errs) > 0 || committed == 0 {
		return map[string]any{"count": 0, "errors": errs, "client": map[string]any{"name": "franz-go"},
			"transactions": map[string]int{"committed": committed, "aborted": aborted}}
	}
	consumeArgs := []string{"--brokers", *brokers, "--topic", *topic, "--count", strconv.Itoa(committed),
		"--isolation", "read_committed", "--records", "--timeout-ms", strconv.Itoa(*timeoutMs)}
	if *group != "" {
		consumeArgs = append(consumeArgs, "--group", *group)
	}
	out := consume(consumeArgs)
	leaked := 0
	for _, r := range out["records"].([]recordOut) {
		if r.Value != nil && bytes.HasPrefix([]byte(*r.Value), abortedMark) {
			leaked++
		}
	}
	if leaked > 0 {
		out["errors"] = append(out["errors"].([]string), fmt.Sprintf("read_committed consumer saw %d aborted records", leaked))
	}
	if !*withRecords {
		delete(out, "records")
	}
	out["transactions"] = map[string]int{"committed": committed, "aborted": aborted}
	return out
}
