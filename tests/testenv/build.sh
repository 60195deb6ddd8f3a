#!/usr/bin/env bash
# Builds the test control plane (Kubernetes v1.36.3 kube-apiserver +
# kube-controller-manager + embedded etcd in one `testenv` binary, and kubectl)
# from the Go module proxy, once, and caches the binaries under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/orrery/testenv/<key>/
# where <key> hashes go.mod, go.sum, this script, the Go sources and the Go
# version. Prints that directory as the last line on stdout:
#   BIN=$(tests/testenv/build.sh) && "$BIN/testenv" up
# Progress goes to stderr. A cold build takes several minutes (see README.md);
# a cached run returns immediately.
#
# Environment: GO (go binary; default: go on PATH, else /usr/local/go/bin/go),
# TESTENV_CACHE_DIR (overrides the cache root), TESTENV_REBUILD=1 (ignore cache).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

go="${GO:-}"
if [[ -z "$go" ]]; then
	if command -v go >/dev/null 2>&1; then go="$(command -v go)"; else go=/usr/local/go/bin/go; fi
fi
[[ -x "$go" ]] || { echo "build.sh: no Go toolchain (set GO=/path/to/go)" >&2; exit 1; }

k8s_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' go.mod)"
[[ "$k8s_version" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || { echo "build.sh: cannot read the k8s.io/kubernetes version from go.mod" >&2; exit 1; }
k8s_minor="${BASH_REMATCH[1]}"

key="$(
	{
		"$go" env GOVERSION GOOS GOARCH
		for f in go.mod go.sum build.sh $(ls ./*.go | LC_ALL=C sort); do
			printf '%s\n' "$f"
			cat "$f"
		done
	} | sha256sum | cut -c1-16
)"
cache_root="${TESTENV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/orrery/testenv}"
bin="$cache_root/$key"

cached() { [[ -f "$bin/.complete" && -x "$bin/testenv" && -x "$bin/kubectl" ]]; }

if [[ "${TESTENV_REBUILD:-}" != 1 ]] && cached; then
	echo "$bin"
	exit 0
fi

mkdir -p "$cache_root"
# One build at a time per cache (parallel test binaries may all call this).
exec 9>"$cache_root/.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi
if [[ "${TESTENV_REBUILD:-}" != 1 ]] && cached; then
	echo "$bin"
	exit 0
fi

# Same -X variables as Kubernetes' hack/lib/version.sh, so /version and
# `kubectl version` report the real release.
ldflags="-s -w"
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
	ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

tmp="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "build.sh: building Kubernetes $k8s_version test control plane into $bin (cold: several minutes)" >&2
start=$SECONDS
# CGO off: static binaries, no C toolchain needed. GOFLAGS and GOCACHE are
# left to the caller; the Go build cache makes rebuilds after a source change fast.
CGO_ENABLED=0 "$go" build -trimpath -ldflags "$ldflags" -o "$tmp/" . k8s.io/kubernetes/cmd/kubectl
ln -s testenv "$tmp/kube-apiserver"
ln -s testenv "$tmp/kube-controller-manager"
touch "$tmp/.complete"
rm -rf "$bin"
mv "$tmp" "$bin"
trap - EXIT
echo "build.sh: built in $((SECONDS - start))s" >&2
# Keep the three most recent builds (other checkouts may use other keys).
ls -1dt "$cache_root"/*/ 2>/dev/null | tail -n +4 | while read -r old; do
	[[ -f "$old/.complete" ]] && rm -rf "$old"
done
echo "$bin"
