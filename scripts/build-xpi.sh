#!/usr/bin/env bash
# Packs extension/ into an unsigned Firefox add-on: target/browser-mcp-VERSION.xpi (or the path
# given as $1). An .xpi is a zip with manifest.json at its root; the same directory is what
# Chromium loads unpacked. Firefox ESR, Developer Edition and Nightly install an unsigned .xpi
# permanently once xpinstall.signatures.required is false (about:config); release Firefox
# installs only signed add-ons (docs/firefox.md).
#
#   scripts/build-xpi.sh                 # target/browser-mcp-0.1.0.xpi
#   scripts/build-xpi.sh /tmp/bm.xpi
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
ext="$root/extension"
version="$(sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$ext/manifest.json")"
[[ -n "$version" ]] || { echo "build-xpi: no version in $ext/manifest.json" >&2; exit 1; }
out="${1:-$root/target/browser-mcp-$version.xpi}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
command -v zip >/dev/null || { echo "build-xpi: needs zip (apt-get install zip)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
rm -f "$out"
# What the browser loads, and the readable sources of its minified files
# (scripts/minify-extension.mjs); not the notes and the icon generator.
cd "$ext"
zip -q -X -r "$out" . -x 'README.md' 'worker/*/README.md' 'icons/make-icons.mjs' '.*'
echo "$out"
