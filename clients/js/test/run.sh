#!/bin/sh
# Runs the client's tests with Node's test runner (they need the debug binaries: cargo build).
# The client uses the platform WebSocket: Node >= 22 has it, Node 20/21 behind
# --experimental-websocket; Node 18 has none and the tests hand the client the `ws` package
# (Debian: apt-get install node-ws).
set -eu
cd "$(dirname "$0")"
flags=
if ! node -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' &&
  node --experimental-websocket -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' 2>/dev/null; then
  flags=--experimental-websocket
fi
exec node $flags --test ./*.test.js
