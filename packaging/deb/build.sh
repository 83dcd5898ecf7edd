#!/usr/bin/env bash
# Builds the Debian package with dpkg-deb (no cargo-deb to install): the two binaries, man
# pages, systemd user units and shell completions.
#
# usage: packaging/deb/build.sh [BIN_DIR [OUT_DIR]]
#   BIN_DIR  where browser-mcpd and browserctl are (default: target/release, built if absent)
#   OUT_DIR  where the .deb goes (default: target/deb); its path is printed last
#   DEB_COMPRESSION=none|gzip|xz (default xz) trades size for time (CI uses gzip)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/release}
out=${2:-target/deb}
if [[ ! -x $bin/browser-mcpd || ! -x $bin/browserctl ]]; then
  [[ $bin == target/release ]] || { echo "no browser-mcpd/browserctl in $bin" >&2; exit 1; }
  cargo build --release --locked
fi

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

# Stripped, as Debian ships binaries (debug info belongs in a -dbgsym package).
strip=()
command -v strip >/dev/null && strip=(-s)
install -Dm755 "${strip[@]}" "$bin/browser-mcpd" "$root/usr/bin/browser-mcpd"
install -Dm755 "${strip[@]}" "$bin/browserctl" "$root/usr/bin/browserctl"
install -Dm644 systemd/browser-mcpd.service "$root/usr/lib/systemd/user/browser-mcpd.service"
install -Dm644 systemd/browser-mcpd.socket "$root/usr/lib/systemd/user/browser-mcpd.socket"
install -d "$root/usr/share/man/man8" "$root/usr/share/man/man1"
gzip -9n <man/browser-mcpd.8 >"$root/usr/share/man/man8/browser-mcpd.8.gz"
gzip -9n <man/browserctl.1 >"$root/usr/share/man/man1/browserctl.1.gz"
install -d "$root/usr/share/bash-completion/completions" \
  "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
"$bin/browserctl" completions bash >"$root/usr/share/bash-completion/completions/browserctl"
"$bin/browserctl" completions zsh >"$root/usr/share/zsh/vendor-completions/_browserctl"
"$bin/browserctl" completions fish >"$root/usr/share/fish/vendor_completions.d/browserctl.fish"
install -d "$root/usr/share/doc/browser-mcp"
install -m644 README.md "$root/usr/share/doc/browser-mcp/README.md"
cat >"$root/usr/share/doc/browser-mcp/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: browser-mcp

Files: *
Copyright: the browser-mcp authors
License: MIT or Apache-2.0
COPYRIGHT
chmod 644 "$root/usr/share/doc/browser-mcp/copyright"

# The libc version the binaries need, when dpkg-shlibdeps is at hand.
depends=libc6
if command -v dpkg-shlibdeps >/dev/null; then
  work=$(mktemp -d)
  mkdir -p "$work/debian"
  printf 'Source: browser-mcp\n\nPackage: browser-mcp\nArchitecture: any\n' >"$work/debian/control"
  shlibs=$(cd "$work" && dpkg-shlibdeps -O "$root/usr/bin/browser-mcpd" "$root/usr/bin/browserctl" 2>/dev/null || true)
  rm -rf "$work"
  [[ $shlibs == shlibs:Depends=* ]] && depends=${shlibs#shlibs:Depends=}
fi

install -d "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<CONTROL
Package: browser-mcp
Version: $version
Architecture: $arch
Maintainer: ${DEB_MAINTAINER:-browser-mcp maintainers <browser-mcp@localhost>}
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Section: utils
Priority: optional
Description: tools in browser tabs for shell scripts, pipelines and AI agents
 browser-mcpd is a per-user daemon that browser extensions connect to over a
 loopback WebSocket; it keeps a live registry of browsers, tabs and the tools
 each tab exposes, and routes tool calls to tabs with timeouts and retries.
 browserctl is its command-line client. Start the daemon with
 "systemctl --user enable --now browser-mcpd".
CONTROL

mkdir -p "$out"
deb="$out/browser-mcp_${version}_${arch}.deb"
dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" --build "$root" "$deb" >/dev/null
echo "$deb"
