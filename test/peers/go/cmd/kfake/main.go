// Command kfake runs franz-go's in-process fake Kafka cluster as a test peer: an independent
// Kafka implementation that stores cleanup.policy but never compacts.
package main

import (
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
	flag.Parse()

	listen, err := listenPorts(*ports, *brokers, *basePort)
	if err != nil {
		fail(err)
	}
	opts := []kfake.Opt{
		kfake.Ports(listen...),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(*partitions),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, level(*logLevel))),
		kfake.MaxVersions(advertised()),
	}
	if len(cfgs) > 0 {
		opts = append(opts, kfake.BrokerConfigs(cfgs))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		fail(err)
	}
	defer cluster.Close()

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
func advertised() *kversion.Versions {
	vs := kversion.Stable()
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		vs.SetMaxKeyVersion(k, math.MaxInt16) // kfake takes the lower of this and its own
	}
	vs.SetMaxKeyVersion(int16(kmsg.DescribeTopicPartitions), -1)
	vs.SetMaxKeyVersion(int16(kmsg.ApiVersions), 4)
	return vs
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
