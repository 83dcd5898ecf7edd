#!/usr/bin/env bash
# A pipeline with no person and no desktop (README, "Pipelines", shows this very script): a
# headless browser of its own, a page's WebMCP tool called from the shell, the answer through
# jq, the browser closed. Needs browserctl, browser-mcpd, jq, python3 and Chromium (or Chrome,
# Edge, Brave, Firefox ESR: BROWSER=firefox); uses the user's daemon, or runs one meanwhile.
set -euo pipefail
work=$(mktemp -d) b="" pids=()
trap '[ -z "$b" ] || browserctl browser close "$b" >/dev/null || :; kill "${pids[@]}" 2>/dev/null || :; wait || :; rm -rf "$work"' EXIT
if ! browserctl status >/dev/null 2>&1; then
  export BROWSER_MCP_SOCKET=$work/daemon.sock
  browser-mcpd --port 0 --discovery-dir "$work/discovery" 2>"$work/daemon.log" & pids+=($!)
  until browserctl status >/dev/null 2>&1; do sleep 0.1; done
fi
# The page (any http(s) page with WebMCP tools will do), served on loopback.
python3 -u -m http.server -b 127.0.0.1 -d "$(dirname "$0")" 0 >"$work/http.log" 2>&1 & pids+=($!)
until port=$(grep -om1 'port [0-9]*' "$work/http.log" 2>/dev/null); do sleep 0.1; done
url="http://127.0.0.1:${port#port }/pipeline-page.html"

b=$(browserctl browser launch --headless ${BROWSER:+--browser "$BROWSER"} --url "$url")
tab=$(browserctl wait --tool count_words --timeout 30s --json | jq -r '.tools[0].tab')
browserctl call count_words --tab "$tab" --text 'pipelines without a person' --json |
  jq -r '"count_words: \(.result.structuredContent.words)"'
browserctl call browser_snapshot --tab "$tab" --json | jq -r '.result.content[0].text' | grep -m1 'Word counter'
browserctl browser close "$b" >/dev/null && b="" && echo closed
