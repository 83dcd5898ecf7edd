#!/usr/bin/env bash
# Sets the formula's homepage, url and sha256 for a release tarball.
# usage: packaging/homebrew/fill.sh HOMEPAGE URL TARBALL   (TARBALL: the file at URL)
set -euo pipefail
homepage=$1 url=$2 tarball=$3
formula="$(dirname "$0")/browser-mcp.rb"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
sed -i -e "s|^  homepage \".*\"|  homepage \"$homepage\"|" -e "s|^  url \".*\"|  url \"$url\"|" -e "s|^  sha256 \".*\"|  sha256 \"$sum\"|" "$formula"
grep -E '^  (homepage|url|sha256) ' "$formula"
