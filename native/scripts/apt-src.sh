#!/usr/bin/env bash
# Runs apt-get with a private deb-src setup in APTDIR, derived from the machine's own apt sources
# (no host named here; signatures checked by apt as usual). The lists are fetched once per APTDIR.
# Usage: apt-src.sh APTDIR APT-GET-ARGS...   e.g. apt-src.sh /tmp/apt source --download-only cjson
set -euo pipefail
dir=$1
shift
opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$dir/sources" -o Dir::State::Lists="$dir/lists")
if [ ! -f "$dir/.updated" ]; then
  rm -rf "$dir/sources" "$dir/lists"
  mkdir -p "$dir/sources" "$dir/lists/partial"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" > "$dir/sources/$(basename "$f")"
  done
  if [ -f /etc/apt/sources.list ]; then
    grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' > "$dir/sources/from-sources-list.list" || true
  fi
  apt-get "${opts[@]}" update -qq
  touch "$dir/.updated"
fi
exec apt-get "${opts[@]}" "$@"
