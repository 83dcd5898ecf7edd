#!/usr/bin/env bash
# Checks a built .deb: exactly the files in packaging/deb/files.txt and the extension's,
# sane control fields, and binaries that run.   usage: packaging/deb/check.sh PACKAGE.deb
set -euo pipefail
deb=$1
here=$(cd "$(dirname "$0")" && pwd)
x=$(mktemp -d)
trap 'rm -rf "$x" "$x.lintian"' EXIT
got=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' | sort)
# And the extension, as build.sh copies it from the source tree.
want=$( (grep -v '^#' "$here/files.txt"
  cd "$here/../../extension" && find . -type f ! -name 'README.md' ! -name 'LICENSE*' ! -name '.*' \
    ! -path './icons/make-icons.mjs' | sed 's|^\./|/usr/share/browser-mcp/extension/|') | sort)
if [[ $got != "$want" ]]; then
  echo "deb file list differs from packaging/deb/files.txt (< expected, > in the package):" >&2
  diff <(echo "$want") <(echo "$got") >&2 || true
  exit 1
fi
for field in Package Version Architecture Maintainer Depends Description; do
  # Not `| grep -q`: with pipefail, grep leaving early fails the pipeline by SIGPIPE.
  [[ -n $(dpkg-deb -f "$deb" "$field") ]] || { echo "control field $field is empty" >&2; exit 1; }
done
# What dpkg needs to verify the installed files, and the ./ entry a directory of mode 755.
dpkg-deb -I "$deb" md5sums >/dev/null || { echo "no md5sums in $deb" >&2; exit 1; }
root_mode=$(dpkg-deb -c "$deb" | awk '$6 == "./" {print $1}')
[[ $root_mode == drwxr-xr-x ]] || { echo "the ./ entry has mode $root_mode" >&2; exit 1; }
# Lintian, when at hand (.ci/run installs it): errors, warnings and pedantic hints all fail.
if command -v lintian >/dev/null; then
  # Its scratch files (mldbm-elf-*) go in our temp dir, not /tmp.
  if ! TMPDIR="$x" lintian --fail-on error,warning,info,pedantic --pedantic --info "$deb" >"$x.lintian" 2>&1; then
    echo "lintian:" >&2
    grep -v 'running with root privileges' "$x.lintian" >&2
    exit 1
  fi
  echo "lintian clean"
elif [[ ${CI:-} == true ]]; then
  echo "lintian is missing (CI installs it)" >&2
  exit 1
else
  echo "*** SKIPPED lintian: not installed (apt-get install lintian) ***" >&2
fi
dpkg-deb -x "$deb" "$x"
"$x/usr/bin/browser-mcpd" --version | grep -q "$(dpkg-deb -f "$deb" Version)"
"$x/usr/bin/browserctl" --version >/dev/null
echo "deb ok: $deb ($(echo "$got" | wc -l) files, Depends: $(dpkg-deb -f "$deb" Depends))"
