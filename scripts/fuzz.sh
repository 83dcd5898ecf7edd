#!/usr/bin/env bash
# Fuzzes the parsers that read what peers send, with libFuzzer on the stable toolchain.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # default: 60 s each, every target
#   FUZZ_RUNS=10000000 scripts/fuzz.sh 0      # a number of executions instead of a time
#
# Targets (fuzz/src/lib.rs): bridge, register, jsonrpc (the three extension dialects),
# control (the control API's request parsing), args (tool schemas and arguments).
# Coverage comes from rustc's stable `-C passes=sancov-module` (no nightly, no cargo-fuzz);
# libfuzzer-sys builds libFuzzer itself (needs a C++ compiler). The corpus grows in
# fuzz/corpus/TARGET (seeded from fuzz/seeds/TARGET); crashes land in fuzz/artifacts/TARGET.
# Prints each target's executions; exits non-zero on the first crash.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(bridge register jsonrpc control args)

export RUSTFLAGS="-C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=4 \
-C llvm-args=-sanitizer-coverage-inline-8bit-counters -C llvm-args=-sanitizer-coverage-pc-table \
-C llvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-target}"
# An explicit --target keeps RUSTFLAGS (the instrumentation) off build scripts and proc
# macros, which must link without libFuzzer.
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --bins --quiet --target "$host"
bin="$CARGO_TARGET_DIR/$host/release"

limit=(-max_total_time="$secs")
[[ -n "${FUZZ_RUNS:-}" ]] && limit=(-runs="$FUZZ_RUNS")
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  [[ -d "seeds/$t" ]] && cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
  log="artifacts/$t/last-run.log"
  echo "== $t"
  "$bin/$t" "corpus/$t" -dict=json.dict "${limit[@]}" \
    -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || {
    echo "!! $t crashed; see $log and artifacts/$t/"
    tail -40 "$log"
    exit 1
  }
  grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$log" | tail -2
done
