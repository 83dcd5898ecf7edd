#!/usr/bin/env bash
# Builds the Debian package with dpkg-deb (no cargo-deb to install): the two binaries, man
# pages, systemd user units, shell completions and the extension that launched browsers load.
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
# mktemp makes the directory 0700; it becomes the package's ./ entry.
chmod 755 "$root"
maintainer=${DEB_MAINTAINER:-browser-mcp maintainers <maintainers@browsermcp.dev>}

# Stripped as dh_strip does it (debug info belongs in a -dbgsym package).
install -Dm755 "$bin/browser-mcpd" "$root/usr/bin/browser-mcpd"
install -Dm755 "$bin/browserctl" "$root/usr/bin/browserctl"
if command -v strip >/dev/null; then
  strip --remove-section=.comment --remove-section=.note --strip-unneeded \
    "$root/usr/bin/browser-mcpd" "$root/usr/bin/browserctl"
fi
install -Dm644 systemd/browser-mcpd.service "$root/usr/lib/systemd/user/browser-mcpd.service"
install -Dm644 systemd/browser-mcpd.socket "$root/usr/lib/systemd/user/browser-mcpd.socket"
install -Dm644 systemd/browser-mcp.tmpfiles "$root/usr/lib/tmpfiles.d/browser-mcp.conf"
install -d "$root/usr/share/man/man1"
gzip -9n <man/browser-mcpd.1 >"$root/usr/share/man/man1/browser-mcpd.1.gz"
gzip -9n <man/browserctl.1 >"$root/usr/share/man/man1/browserctl.1.gz"
install -d "$root/usr/share/bash-completion/completions" \
  "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
# The dynamic scripts run /usr/bin/browserctl as the user types, for live tab and tool names.
"$bin/browserctl" completions bash >"$root/usr/share/bash-completion/completions/browserctl"
"$bin/browserctl" completions zsh >"$root/usr/share/zsh/vendor-completions/_browserctl"
"$bin/browserctl" completions fish >"$root/usr/share/fish/vendor_completions.d/browserctl.fish"
chmod 644 "$root"/usr/share/*/*/browserctl* "$root"/usr/share/zsh/vendor-completions/_browserctl
# The extension a browser the daemon launches loads (`browserctl browser launch`): the daemon
# looks for it in ../share/browser-mcp/extension beside its binary. What the browser loads,
# as scripts/build-xpi.sh packs it: not the notes, the icon generator nor the vendored
# library's licence file (its terms are in the copyright file).
ext="$root/usr/share/browser-mcp/extension"
(cd extension && find . -type f ! -name 'README.md' ! -name 'LICENSE*' ! -name '.*' \
  ! -path './icons/make-icons.mjs' -print0) | while IFS= read -r -d '' f; do
  install -Dm644 "extension/$f" "$ext/${f#./}"
done
doc="$root/usr/share/doc/browser-mcp"
install -d "$doc"
install -m644 README.md "$doc/README.md"
# The pages README.md links to, so its links work in the installed copy too.
install -d "$doc/docs"
install -m644 docs/*.md "$doc/docs/"
install -m644 packaging/deb/copyright "$doc/copyright"
# A native package's changelog: packaging/deb/changelog, whose first entry is this version.
top=$(sed -n '1s/^browser-mcp (\([^)]*\)).*/\1/p' packaging/deb/changelog)
[[ $top == "$version" ]] || {
  echo "packaging/deb/changelog starts at $top, Cargo.toml says $version: add an entry" >&2
  exit 1
}
gzip -9n <packaging/deb/changelog >"$doc/changelog.gz"
chmod 644 "$doc/changelog.gz"
# Rust does not link glibc's _FORTIFY_SOURCE wrappers; lintian's hint does not apply.
install -Dm644 packaging/deb/lintian-overrides "$root/usr/share/lintian/overrides/browser-mcp"

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
Maintainer: $maintainer
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

(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

mkdir -p "$out"
deb="$out/browser-mcp_${version}_${arch}.deb"
dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" --build "$root" "$deb" >/dev/null
echo "$deb"
