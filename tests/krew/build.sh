#!/usr/bin/env bash
# Builds krew (the kubectl plugin manager, the version go.mod pins) from the Go module proxy, once, and caches the binary
# under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/orrery/krew/<key>/krew
# where <key> hashes go.mod, go.sum, this script and the Go version. Prints that directory as the
# last line on stdout:
#   BIN=$(tests/krew/build.sh) && KREW_ROOT=/tmp/k "$BIN/krew" version
# Progress goes to stderr. A cold build takes about a minute on 2 cores; a cached run returns
# at once. The plugin's krew manifest test (tests/tests/krew.rs) installs kubectl orrery with it.
#
# Environment: GO (go binary; default: go on PATH, else /usr/local/go/bin/go),
# KREW_CACHE_DIR (overrides the cache root), KREW_REBUILD=1 (ignore the cache).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

go="${GO:-}"
if [[ -z "$go" ]]; then
	if command -v go >/dev/null 2>&1; then go="$(command -v go)"; else go=/usr/local/go/bin/go; fi
fi
[[ -x "$go" ]] || { echo "krew/build.sh: no Go toolchain (set GO=/path/to/go)" >&2; exit 1; }

krew_version="$(awk '$1 == "sigs.k8s.io/krew" { print $2; exit }' go.mod)"
[[ "$krew_version" =~ ^v0\.[0-9]+\.[0-9]+$ ]] || { echo "krew/build.sh: cannot read the sigs.k8s.io/krew version from go.mod" >&2; exit 1; }

key="$(
	{
		"$go" env GOVERSION GOOS GOARCH
		for f in go.mod go.sum build.sh; do
			printf '%s\n' "$f"
			cat "$f"
		done
	} | sha256sum | cut -c1-16
)"
cache_root="${KREW_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/orrery/krew}"
bin="$cache_root/$key"

cached() { [[ -f "$bin/.complete" && -x "$bin/krew" ]]; }

if [[ "${KREW_REBUILD:-}" != 1 ]] && cached; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache_root"
# One build at a time per cache (parallel test binaries may all call this).
exec 9>"$cache_root/.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi
if [[ "${KREW_REBUILD:-}" != 1 ]] && cached; then
	echo "$bin"
	exit 0
fi

tmp="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "krew/build.sh: building krew $krew_version into $bin (cold: about a minute)" >&2
start=$SECONDS
# `krew version` reports what internal/version holds.
ldflags="-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$krew_version"
CGO_ENABLED=0 "$go" build -trimpath -ldflags "$ldflags" -o "$tmp/krew" sigs.k8s.io/krew/cmd/krew
touch "$tmp/.complete"
rm -rf "$bin"
mv "$tmp" "$bin"
trap - EXIT
echo "krew/build.sh: built in $((SECONDS - start))s" >&2
# Keep the three most recent builds (other checkouts may use other keys).
ls -1dt "$cache_root"/*/ 2>/dev/null | tail -n +4 | while read -r old; do
	[[ -f "$old/.complete" ]] && rm -rf "$old"
done
echo "$bin"
