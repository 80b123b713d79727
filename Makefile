# kcompact — the two commands a newcomer needs:
#   make run    start a local upstream without compaction and kcompact in front of it
#   make test   install everything (npm, Kafka jars, Go and Python peers) and run every test

SHELL := /bin/bash
# TAP as the run goes, then (failures-reporter.mjs) the failed tests again in the last lines.
NODE_TEST := node --test --test-concurrency=1 --test-timeout=600000 \
	--test-reporter=tap --test-reporter-destination=stdout \
	--test-reporter=./scripts/failures-reporter.mjs --test-reporter-destination=stdout

.PHONY: all deps build lint format peers test test-unit test-integration profiles soak run bench bench-compaction bench-carry bench-segments bench-pacing bench-replicas bench-scale bench-tables fuzz gen clean

all: build

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.package-lock.json

build: deps
	npx tsc -p tsconfig.json
	@chmod +x dist/src/cli/main.js

# What prettier formats; src/protocol/generated is the generator's (.prettierignore).
FORMATTED := 'src/**/*.ts' 'test/**/*.ts' 'bench/**/*.ts' 'scripts/**/*.mjs' eslint.config.js

# ESLint with typescript-eslint, and prettier's check: part of `make test`, so CI fails on either.
lint: deps
	npx eslint --max-warnings 0 .
	npx prettier --check $(FORMATTED)

format: deps
	npx prettier --write $(FORMATTED)

peers:
	bash test/peers/install.sh

test: build lint peers
	$(NODE_TEST) $$(find dist/test/unit dist/test/integration -name '*.test.js' | sort)

test-unit: build
	$(NODE_TEST) $$(find dist/test/unit -name '*.test.js' | sort)

test-integration: build peers
	$(NODE_TEST) $$(find dist/test/integration -name '*.test.js' | sort)

# kcompact, carrying, in front of brokers shaped like Event Hubs, OCI Streaming, Confluent Freight and
# tiered-storage Kafka (test/support/store-profiles.ts); not part of `make test`. KCOMPACT_PROFILES=name,... runs some.
# One file holds every profile, a few minutes each: its timeout is the sweep's, not a test's.
profiles: build peers
	$(NODE_TEST) --test-timeout=3600000 $$(find dist/test/profiles -name '*.test.js' | sort)

# The suite's soaks at length: tail readers of every client through 1,000 passes, and 40 SIGKILLs
# of a cleaning proxy (about 40 minutes); not part of `make test`. Each file gets 90 minutes, not
# NODE_TEST's 10: the tests set their own timeouts by their length.
soak: build peers
	KCOMPACT_SOAK_PASSES=1000 KCOMPACT_FAULT_ITERATIONS=40 $(NODE_TEST) --test-timeout=5400000 dist/test/integration/own-records-soak.test.js dist/test/integration/faults-kill.test.js

run: build peers
	bash scripts/run-local.sh

# BENCH_ARGS="--cpu-layout sidecar --rounds 3" and so on (see bench/proxy-throughput.ts).
bench: build peers
	node dist/bench/proxy-throughput.js $(BENCH_ARGS)

bench-compaction: build peers
	node dist/bench/compaction.js

# Carrying against Kafka's own cleaner (issue 18); CARRY_ARGS="--keys 20000 --small-keys 5000" for a shorter run.
bench-carry: build peers
	node dist/bench/carrying.js $(CARRY_ARGS)

# What the store holds once passes' ranges are freed, against Kafka's cleaner (issue 33); SEGMENTS_ARGS="--keys 5000" for a shorter run.
bench-segments: build peers
	node dist/bench/store-segments.js $(SEGMENTS_ARGS)

# The application's produce latency through kcompact during an unpaced and a paced pass, against none, on a shared produce quota (issue 33); PACING_ARGS="--json FILE".
bench-pacing: build peers
	node dist/bench/pass-latency.js $(PACING_ARGS)

# Many replicas, one cleaner (issue 19): store bytes read by three replicas against one, failover; REPLICAS_ARGS="--keys 500 --rounds 2" for a short run.
bench-replicas: build peers
	node dist/bench/replicas.js $(REPLICAS_ARGS)

# 1,000 compacted partitions, 10M keys and a 30-minute soak after 25 minutes of warm-up (about 65 minutes);
# SCALE_ARGS="--partitions 50 --keys 200000 --soak-minutes 1 --soak-warm-up-minutes 0" for a run of a minute and a half.
bench-scale: build peers
	node dist/bench/scale.js $(SCALE_ARGS)

# The table API (issue 35): GET latency and rate beside a bare node:http server, a write's latency beside a plain produce, CAS throughput over 1, 2 and 4 partitions; TABLES_ARGS="--store kfake --seconds 3" for a short run.
bench-tables: build peers
	node dist/bench/tables.js $(TABLES_ARGS)

# A million mutated and random frames through the decoders; FUZZ_ARGS="--seed N --frames N" to replay.
fuzz: build
	node dist/bench/fuzz-codec.js $(FUZZ_ARGS)

gen:
	node scripts/gen-protocol.mjs

clean:
	rm -rf dist
