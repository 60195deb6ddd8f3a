#!/usr/bin/env bash
# Builds Helm (v4, the version go.mod pins) from the Go module proxy, once, and caches the binary
# under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/orrery/helm/<key>/helm
# where <key> hashes go.mod, go.sum, this script and the Go version. Prints that directory as the
# last line on stdout:
#   BIN=$(tests/helm/build.sh) && "$BIN/helm" lint charts/orrery
# Progress goes to stderr. A cold build takes about 3 minutes on 2 cores; a cached run returns
# at once. The chart's tests (tests/tests/chart.rs) and `orrery up` use this binary.
#
# Environment: GO (go binary; default: go on PATH, else /usr/local/go/bin/go),
# HELM_CACHE_DIR (overrides the cache root), HELM_REBUILD=1 (ignore the cache).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

go="${GO:-}"
if [[ -z "$go" ]]; then
	if command -v go >/dev/null 2>&1; then go="$(command -v go)"; else go=/usr/local/go/bin/go; fi
fi
[[ -x "$go" ]] || { echo "helm/build.sh: no Go toolchain (set GO=/path/to/go)" >&2; exit 1; }

helm_version="$(awk '$1 == "helm.sh/helm/v4" { print $2; exit }' go.mod)"
[[ "$helm_version" =~ ^v4\.[0-9]+\.[0-9]+$ ]] || { echo "helm/build.sh: cannot read the helm.sh/helm/v4 version from go.mod" >&2; exit 1; }

key="$(
	{
		"$go" env GOVERSION GOOS GOARCH
		for f in go.mod go.sum build.sh; do
			printf '%s\n' "$f"
			cat "$f"
		done
	} | sha256sum | cut -c1-16
)"
cache_root="${HELM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/orrery/helm}"
bin="$cache_root/$key"

cached() { [[ -f "$bin/.complete" && -x "$bin/helm" ]]; }

if [[ "${HELM_REBUILD:-}" != 1 ]] && cached; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache_root"
# One build at a time per cache (parallel test binaries may all call this).
exec 9>"$cache_root/.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi
if [[ "${HELM_REBUILD:-}" != 1 ]] && cached; then
	echo "$bin"
	exit 0
fi

tmp="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "helm/build.sh: building Helm $helm_version into $bin (cold: about 3 minutes)" >&2
start=$SECONDS
# `helm version` reports what internal/version holds; without -X it says "v4.3" and no commit.
ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version"
CGO_ENABLED=0 "$go" build -trimpath -ldflags "$ldflags" -o "$tmp/helm" helm.sh/helm/v4/cmd/helm
touch "$tmp/.complete"
rm -rf "$bin"
mv "$tmp" "$bin"
trap - EXIT
echo "helm/build.sh: built in $((SECONDS - start))s" >&2
# Keep the three most recent builds (other checkouts may use other keys).
ls -1dt "$cache_root"/*/ 2>/dev/null | tail -n +4 | while read -r old; do
	[[ -f "$old/.complete" ]] && rm -rf "$old"
done
echo "$bin"
