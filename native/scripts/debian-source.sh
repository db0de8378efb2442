#!/usr/bin/env bash
# Downloads and unpacks a Debian source package with apt (signatures checked by apt), using a
# private deb-src list derived from the machine's own apt sources. Cached: a second call is free.
# Usage: debian-source.sh PACKAGE DESTDIR
set -euo pipefail
pkg=$1
dest=$2
[ -f "$dest/.unpacked" ] && exit 0
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && "$here/apt-src.sh" "$work/apt" source --download-only "$pkg" >/dev/null 2>&1)
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
# dpkg-source applies Debian's own patches (security fixes included) on top of upstream; the
# upstream tarball stays in the work directory, not beside DESTDIR.
dpkg-source --no-check --no-copy -x "$(ls "$work"/*.dsc | head -n1)" "$dest" >/dev/null
touch "$dest/.unpacked"
