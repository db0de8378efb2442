#!/usr/bin/env bash
# Downloads and unpacks a Debian source package with apt (signatures checked by apt), using a
# private deb-src list derived from the machine's own apt sources. Cached: a second call is free.
# Usage: debian-source.sh PACKAGE DESTDIR
set -euo pipefail
pkg=$1
dest=$2
[ -f "$dest/.unpacked" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sources" "$work/lists/partial"
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" > "$work/sources/$(basename "$f")"
done
if [ -f /etc/apt/sources.list ]; then
  grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' > "$work/sources/from-list.list" || true
fi
opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/sources" -o Dir::State::Lists="$work/lists")
apt-get "${opts[@]}" update -qq
(cd "$work" && apt-get "${opts[@]}" source --download-only "$pkg" >/dev/null 2>&1)
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
# dpkg-source applies Debian's own patches (security fixes included) on top of upstream.
dpkg-source --no-check -x "$(ls "$work"/*.dsc | head -n1)" "$dest" >/dev/null
touch "$dest/.unpacked"
