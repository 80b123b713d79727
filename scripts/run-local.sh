#!/usr/bin/env bash
# `make run`: a local upstream without compaction (franz-go's kfake, 3 brokers) and kcompact in
# front of it, in the foreground. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${KCOMPACT_CACHE:-$HOME/.cache/kcompact}"
listen="${KCOMPACT_LISTEN:-127.0.0.1:9092}"
upstream_base="${KCOMPACT_LOCAL_UPSTREAM_PORT:-19092}"
data_dir="${KCOMPACT_DATA_DIR:-./kcompact-data}"

fifo="$(mktemp -u)"
mkfifo "$fifo"
"$cache/bin/kfake" --brokers 3 --base-port "$upstream_base" --partitions 3 >"$fifo" &
upstream_pid=$!
trap 'kill "$upstream_pid" 2>/dev/null || true; rm -f "$fifo"' EXIT
read -r announce <"$fifo"
bootstrap="$(node -e 'console.log(JSON.parse(process.argv[1]).bootstrap)' "$announce")"

cat <<MSG
kcompact: local upstream (kfake, 3 brokers, no compaction) at $bootstrap
kcompact: proxy bootstrap at $listen  (data in $data_dir)
kcompact: metrics at http://${KCOMPACT_METRICS_LISTEN:-127.0.0.1:9644}/metrics  (probes: /livez /readyz /startupz)
kcompact: admin listener at ${KCOMPACT_ADMIN_LISTEN:-127.0.0.1:9645}  (npx kcompact status, compact, inspect, rebuild-index)
kcompact: topic "table" is compacted; try   kcat -b $listen -L   (README.md has a walkthrough)
MSG
# A compacted topic to try right away (kcompact's configuration can compact topics on stores with
# no admin APIs); short segments so a clean has something to do within seconds.
demo_topics='[{"topic":"table","configs":{"cleanup.policy":"compact","segment.ms":"1000","delete.retention.ms":"5000"}}]'
# Two malloc arenas and the node flags of src/cli/node-flags.ts, as deploy/Dockerfile runs it.
MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}" node --initial-old-space-size=64 --expose-gc --no-lazy-feedback-allocation dist/src/cli/main.js proxy --upstream "$bootstrap" --listen "$listen" --data-dir "$data_dir" \
  --metrics-listen "${KCOMPACT_METRICS_LISTEN:-127.0.0.1:9644}" --admin-listen "${KCOMPACT_ADMIN_LISTEN:-127.0.0.1:9645}" --topics "${KCOMPACT_TOPICS:-$demo_topics}" &
proxy_pid=$!
# Ctrl-C reaches the whole process group: kcompact shuts down on its own, and a second signal would
# cut its shutdown short, so the script waits for it. A SIGTERM to the script alone is passed on.
trap 'wait "$proxy_pid"' INT
trap 'kill -TERM "$proxy_pid" 2>/dev/null; wait "$proxy_pid"' TERM
wait "$proxy_pid"
