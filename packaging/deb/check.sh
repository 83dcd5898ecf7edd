#!/usr/bin/env bash
# Checks a built .deb: exactly the files in packaging/deb/files.txt, sane control fields, and
# binaries that run.   usage: packaging/deb/check.sh PACKAGE.deb
set -euo pipefail
deb=$1
here=$(cd "$(dirname "$0")" && pwd)
got=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' | sort)
want=$(grep -v '^#' "$here/files.txt" | sort)
if [[ $got != "$want" ]]; then
  echo "deb file list differs from packaging/deb/files.txt (< expected, > in the package):" >&2
  diff <(echo "$want") <(echo "$got") >&2 || true
  exit 1
fi
for field in Package Version Architecture Maintainer Depends Description; do
  dpkg-deb -f "$deb" "$field" | grep -q . || { echo "control field $field is empty" >&2; exit 1; }
done
x=$(mktemp -d)
trap 'rm -rf "$x"' EXIT
dpkg-deb -x "$deb" "$x"
"$x/usr/bin/browser-mcpd" --version | grep -q "$(dpkg-deb -f "$deb" Version)"
"$x/usr/bin/browserctl" --version >/dev/null
echo "deb ok: $deb ($(echo "$got" | wc -l) files, Depends: $(dpkg-deb -f "$deb" Depends))"
