#!/usr/bin/env bash
# The long soak (issue 9): a million tool calls from 16 clients over 8 browser connections
# that die at random (RST, sometimes with calls unanswered) and come back. Checks that every
# call gets exactly one answer (its own result or a typed error), that no call runs twice in
# a browser, that nothing stays pending, and that the daemon's memory stays flat. Release
# build; prints a summary line (`soak: …`). CI runs the same test with 3000 calls.
#
#   scripts/soak.sh                      # 1,000,000 calls
#   SOAK_CALLS=200000 scripts/soak.sh    # any count; also SOAK_BROWSERS, SOAK_CLIENTS,
#                                        # SOAK_DROP_ONE_IN (a browser dies once in N calls)
set -euo pipefail
cd "$(dirname "$0")/.."
export SOAK_CALLS="${SOAK_CALLS:-1000000}"
export SOAK_BROWSERS="${SOAK_BROWSERS:-8}"
export SOAK_CLIENTS="${SOAK_CLIENTS:-16}"
export SOAK_DROP_ONE_IN="${SOAK_DROP_ONE_IN:-2000}"
exec cargo test --release --test it soak_every_call -- --nocapture
