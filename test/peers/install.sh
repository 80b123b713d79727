#!/usr/bin/env bash
# Installs the test bed of real peers (test/peers/README.md) from Maven Central, the Go module
# proxy, PyPI and Debian into $KCOMPACT_CACHE (default ~/.cache/kcompact). Idempotent: a step
# whose result is already complete is skipped, so CI on a fresh machine and a developer's
# second run both end in the same state. Prints one line per step; a failing step prints its log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${KCOMPACT_CACHE:-$HOME/.cache/kcompact}"
kafka_version=4.4.0
kafka_home="$cache/kafka-$kafka_version"
apicurio_version=2.4.2.Final
apicurio_home="$cache/apicurio-registry-$apicurio_version"
bin="$cache/bin"
venv="$cache/venv"
mkdir -p "$cache" "$bin"

log="$(mktemp "${TMPDIR:-/tmp}/kcompact-install.XXXXXX")"
trap 'rm -f "$log"' EXIT

now() { date +%s%N; }

# step NAME FUNCTION: runs FUNCTION with its output in $log; prints NAME, the outcome and the time.
step() {
  local name="$1" fn="$2" t0 outcome
  t0=$(now)
  : >"$log"
  if outcome=$("$fn" 2>>"$log"); then
    printf 'install: %-28s %-10s %6.1fs\n' "$name" "${outcome:-done}" "$(( ($(now) - t0) / 1000000 ))e-3"
  else
    printf 'install: %-28s FAILED after %.1fs; its log:\n' "$name" "$(( ($(now) - t0) / 1000000 ))e-3" >&2
    tail -n 60 "$log" >&2
    exit 1
  fi
}

stamp() { cat "$@" | sha256sum | cut -c1-64; }

kafka_jars() {
  local marker="$kafka_home/.complete" want
  want=$(stamp "$here/kafka/pom.xml")
  if [[ -f "$marker" && "$(cat "$marker")" == "$want" ]]; then
    echo cached
    return
  fi
  command -v java >&2 || { echo "java is not installed (Kafka $kafka_version needs 17+)" >&2; return 1; }
  if ! command -v mvn >/dev/null; then
    apt_install maven >&2
  fi
  rm -rf "$kafka_home"
  local tmp="$kafka_home.partial"
  rm -rf "$tmp"
  mvn -B -q -f "$here/kafka/pom.xml" \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DoutputDirectory="$tmp/lib" -DincludeScope=runtime >&2
  mv "$tmp" "$kafka_home"
  echo "$want" >"$marker"
}

# Apicurio Registry (a schema registry with the Confluent REST API) built by Quarkus from its
# Maven Central jars; only the runner jar and its lib folder are kept.
apicurio_registry() {
  local marker="$apicurio_home/.complete" want
  want=$(stamp "$here/apicurio/pom.xml")
  if [[ -f "$marker" && "$(cat "$marker")" == "$want" ]]; then
    echo cached
    return
  fi
  command -v mvn >/dev/null || apt_install maven >&2
  rm -rf "$apicurio_home"
  local build="$apicurio_home.build"
  rm -rf "$build" "$apicurio_home.partial"
  mvn -B -q -f "$here/apicurio/pom.xml" -Dpeer.buildDirectory="$build" package >&2
  mkdir -p "$apicurio_home.partial"
  mv "$build/apicurio-peer-0-runner.jar" "$apicurio_home.partial/registry.jar"
  mv "$build/lib" "$apicurio_home.partial/lib"
  rm -rf "$build"
  mv "$apicurio_home.partial" "$apicurio_home"
  echo "$want" >"$marker"
}

# Small Java programs of the test bed (test/peers/java/src, default package), compiled against
# the Kafka jars; recompiled when a source or the jars change.
java_programs() {
  local out="$cache/java-classes" marker want sources
  mapfile -t sources < <(find "$here/java/src" -name '*.java' | sort)
  if [[ ${#sources[@]} -eq 0 ]]; then
    echo none
    return
  fi
  want=$(stamp "${sources[@]}" "$kafka_home/.complete")
  marker="$out/.complete"
  if [[ -f "$marker" && "$(cat "$marker")" == "$want" ]]; then
    echo cached
    return
  fi
  rm -rf "$out" "$out.partial"
  mkdir -p "$out.partial"
  javac -nowarn -encoding UTF-8 --release 17 -cp "$kafka_home/lib/*" -d "$out.partial" "${sources[@]}" >&2
  mv "$out.partial" "$out"
  echo "$want" >"$marker"
}

go_programs() {
  command -v go >&2 || { echo "go is not installed" >&2; return 1; }
  # go build is incremental (module and build caches), so this is cheap when nothing changed.
  (cd "$here/go" && go build -mod=readonly -buildvcs=false -o "$bin/" ./cmd/kfake ./cmd/franzclient ./cmd/kbench ./cmd/kworkload ./cmd/krelay ./cmd/khttp) >&2
}

# helm for the chart's tests (helm lint, helm template), pinned, from the Go module proxy.
helm_version=v4.3.2
helm_cli() {
  # A helm built by go install says only its minor version; the module's version is in the binary.
  if [[ -x "$bin/helm" ]] && go version -m "$bin/helm" 2>/dev/null | grep -qE "^\s+mod\s+helm.sh/helm/v4\s+$helm_version\s"; then
    echo cached
    return
  fi
  command -v go >&2 || { echo "go is not installed" >&2; return 1; }
  GOBIN="$bin" GOFLAGS=-buildvcs=false go install "helm.sh/helm/v4/cmd/helm@$helm_version" >&2
}

python_venv() {
  local marker="$venv/.complete" want
  want=$(stamp "$here/python/requirements.txt")
  if [[ -f "$marker" && "$(cat "$marker")" == "$want" ]] && "$venv/bin/python" -c 'import confluent_kafka, kafka' 2>/dev/null; then
    echo cached
    return
  fi
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary=:all: \
    -r "$here/python/requirements.txt" >&2
  "$venv/bin/python" -c 'import confluent_kafka, kafka' >&2
  echo "$want" >"$marker"
}

# apt_install PKG: installs a Debian package, refreshing the package lists only when the first
# attempt cannot find it (a fresh machine may have none).
apt_install() {
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo -n)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y -q "$1" || { "${sudo[@]}" apt-get update -q && "${sudo[@]}" apt-get install -y -q "$1"; }
}

# The TLS tests make their certificates with openssl (Debian's package where it is missing).
openssl_tool() {
  if command -v openssl >/dev/null; then
    echo present
    return
  fi
  apt_install openssl >&2
  command -v openssl >/dev/null
}

kcat_tool() {
  if command -v kcat >/dev/null; then
    echo present
    return
  fi
  if apt_install kcat >&2 && command -v kcat >/dev/null; then
    return
  fi
  echo missing
}

# helm takes minutes of compiling on a fresh machine: it starts first, beside the downloads.
helm_out=$(mktemp)
helm_log=$(mktemp)
helm_cli >"$helm_out" 2>"$helm_log" &
helm_pid=$!
# A step runs in a subshell, which cannot wait for this shell's jobs: the step reports the outcome.
helm_done() {
  cat "$helm_out"
  cat "$helm_log" >&2
  return "$helm_status"
}

step "kafka $kafka_version jars" kafka_jars
step "java programs" java_programs
step "apicurio registry $apicurio_version" apicurio_registry
step "go kfake, franzclient" go_programs
helm_status=0
wait "$helm_pid" || helm_status=$?
step "helm $helm_version" helm_done
rm -f "$helm_out" "$helm_log"
step "python venv" python_venv
step "openssl (debian)" openssl_tool
step "kcat (debian)" kcat_tool
if ! command -v kcat >/dev/null; then
  echo "install: WARNING: kcat is not installed (Debian package kcat unavailable); tests that need it will skip" >&2
fi
