// Command kfake runs franz-go's in-process fake Kafka cluster as a test peer: an independent
// Kafka implementation that stores cleanup.policy but never compacts.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

type brokerConfigs map[string]string

func (b brokerConfigs) String() string { return "" }

func (b brokerConfigs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("expected key=value, got %q", s)
	}
	b[k] = v
	return nil
}

type broker struct {
	NodeID int    `json:"nodeId"`
	Host   string `json:"host"`
	Port   int    `json:"port"`
}

func main() {
	ports := flag.String("ports", "", "comma-separated listen ports, one broker each (overrides --brokers)")
	brokers := flag.Int("brokers", 3, "number of brokers when --ports is not given")
	basePort := flag.Int("base-port", 0, "first port for --brokers (0: the OS picks free ports)")
	partitions := flag.Int("partitions", 1, "partitions of auto-created topics and CreateTopics with -1, like Kafka's num.partitions")
	logLevel := flag.String("log-level", "none", "none, error, warn, info or debug (to stderr)")
	cfgs := brokerConfigs{}
	flag.Var(cfgs, "broker-config", "broker config key=value (repeatable)")
	codecs := flag.String("codecs", "", "comma-separated codecs (none, gzip, snappy, lz4, zstd) produced batches may use; a batch with another is refused with UNSUPPORTED_COMPRESSION_TYPE (default: all)")
	rebatchFetch := flag.Bool("rebatch", false, "serve Fetch answers in batches of one record each, uncompressed, as an event store keeping records one by one does (rebatch.go)")
	withhold := flag.String("withhold", "", "comma-separated API names (kmsg's, e.g. DeleteRecords,InitProducerID) left out of ApiVersions; a request for one closes the connection")
	flag.Parse()

	withheld, err := apiKeys(*withhold)
	if err != nil {
		fail(err)
	}
	allowed, err := codecSet(*codecs)
	if err != nil {
		fail(err)
	}

	listen, err := listenPorts(*ports, *brokers, *basePort)
	if err != nil {
		fail(err)
	}
	opts := []kfake.Opt{
		kfake.Ports(listen...),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, level(*logLevel))),
		kfake.MaxVersions(advertised(withheld)),
	}
	if len(cfgs) > 0 {
		opts = append(opts, kfake.BrokerConfigs(cfgs))
	}
	if *rebatchFetch {
		opts = append(opts, kfake.ListenFn(rebatchListen))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		fail(err)
	}
	defer cluster.Close()
	if allowed != nil {
		refuseCodecs(cluster, allowed)
	}

	// Install the handler before announcing readiness so a prompt SIGTERM still closes cleanly.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)

	var out struct {
		Bootstrap string   `json:"bootstrap"`
		Brokers   []broker `json:"brokers"`
	}
	for i, addr := range cluster.ListenAddrs() {
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			fail(err)
		}
		port, _ := strconv.Atoi(portStr)
		// kfake numbers its brokers 0..n-1 in listen order.
		out.Brokers = append(out.Brokers, broker{NodeID: i, Host: host, Port: port})
	}
	out.Bootstrap = net.JoinHostPort(out.Brokers[0].Host, strconv.Itoa(out.Brokers[0].Port))
	line, _ := json.Marshal(out)
	fmt.Println(string(line))

	<-sigs
}

// advertised is every API at kfake's own highest version, but for two:
//   - DescribeTopicPartitions (KIP-966) is withheld. kfake answers it with null
//     EligibleLeaderReplicas and LastKnownELR, which Kafka never sends and Java's admin (4.4)
//     dereferences: kafka-topics --describe fails with a NullPointerException. Without the key
//     Java's admin describes topics with Metadata.
//   - ApiVersions stops at v4 (no KIP-1242), so the test bed keeps an upstream that answers a
//     v5 ApiVersions with UNSUPPORTED_VERSION (proxy-wire.test.ts); Kafka 4.4 speaks v5.
//
// The base is kversion.Stable for its features, which kfake advertises from these versions.
// Setting MaxVersions at all also makes kfake skip KAFKA-15591's check on a first produce to a
// never-written partition (it models Kafka 4.5 only when uncapped), as Kafka 4.4 does.
//
// --withhold leaves more keys out, as a store that does not implement them (Event Hubs has no
// DeleteRecords, OCI Streaming no idempotent or transactional producers): kfake then handles a
// request for one as Kafka handles a key it does not serve, by closing the connection.
func advertised(withheld []int16) *kversion.Versions {
	vs := kversion.Stable()
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		vs.SetMaxKeyVersion(k, math.MaxInt16) // kfake takes the lower of this and its own
	}
	vs.SetMaxKeyVersion(int16(kmsg.DescribeTopicPartitions), -1)
	vs.SetMaxKeyVersion(int16(kmsg.ApiVersions), 4)
	for _, k := range withheld {
		vs.SetMaxKeyVersion(k, -1)
	}
	return vs
}

// apiKeys reads --withhold: API names as kmsg.NameForKey spells them, any case.
func apiKeys(list string) ([]int16, error) {
	var keys []int16
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := false
		for k := int16(0); k <= kmsg.MaxKey; k++ {
			if strings.EqualFold(kmsg.NameForKey(k), name) {
				keys, found = append(keys, k), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("--withhold: no API named %q", name)
		}
		if k := keys[len(keys)-1]; k == int16(kmsg.ApiVersions) || k == int16(kmsg.Metadata) {
			return nil, fmt.Errorf("--withhold: %s cannot be withheld", name)
		}
	}
	return keys, nil
}

var codecNames = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// codecSet reads --codecs; nil when every codec is allowed.
func codecSet(list string) (map[int8]bool, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	allowed := map[int8]bool{}
	for _, name := range strings.Split(list, ",") {
		found := false
		for id, known := range codecNames {
			if strings.EqualFold(strings.TrimSpace(name), known) {
				allowed[int8(id)], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("--codecs: no codec named %q", name)
		}
	}
	return allowed, nil
}

// refusedCodec is the first codec of a produced partition's batches that is not allowed, or -1.
func refusedCodec(records []byte, allowed map[int8]bool) int8 {
	for len(records) >= 23 {
		// baseOffset (8), batchLength (4), partitionLeaderEpoch (4), magic (1), crc (4), attributes (2)
		codec := int8(binary.BigEndian.Uint16(records[21:23]) & 0x07)
		if !allowed[codec] {
			return codec
		}
		size := 12 + int(int32(binary.BigEndian.Uint32(records[8:12])))
		if size <= 12 || size > len(records) {
			break
		}
		records = records[size:]
	}
	return -1
}

// refuseCodecs answers a Produce whose batches use a codec outside allowed with
// UNSUPPORTED_COMPRESSION_TYPE for every partition of the request (kfake cannot write part of
// a request from a control function); an acks=0 one closes the connection, as Kafka does when
// it cannot answer an error. Other Produce requests go on to kfake untouched.
func refuseCodecs(c *kfake.Cluster, allowed map[int8]bool) {
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ProduceRequest)
		refused := int8(-1)
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				if codec := refusedCodec(p.Records, allowed); codec >= 0 && refused < 0 {
					refused = codec
				}
			}
		}
		if refused < 0 {
			return nil, nil, false
		}
		if req.Acks == 0 {
			return nil, fmt.Errorf("acks=0 produce with refused codec %s", codecNames[refused]), true
		}
		msg := fmt.Sprintf("this store does not accept %s-compressed batches", codecNames[refused])
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.UnsupportedCompressionType.Code
				rp.ErrorMessage = &msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}

func listenPorts(list string, n, base int) ([]int, error) {
	if list != "" {
		var ports []int
		for _, s := range strings.Split(list, ",") {
			p, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || p < 0 || p > 65535 {
				return nil, fmt.Errorf("bad port %q in --ports", s)
			}
			ports = append(ports, p)
		}
		return ports, nil
	}
	if n < 1 {
		return nil, fmt.Errorf("--brokers must be at least 1")
	}
	ports := make([]int, n)
	for i := range ports {
		if base > 0 {
			ports[i] = base + i
		}
	}
	return ports, nil
}

func level(s string) kfake.LogLevel {
	switch strings.ToLower(s) {
	case "debug":
		return kfake.LogLevelDebug
	case "info":
		return kfake.LogLevelInfo
	case "warn":
		return kfake.LogLevelWarn
	case "error":
		return kfake.LogLevelError
	}
	return kfake.LogLevelNone
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kfake:", err)
	os.Exit(1)
}
