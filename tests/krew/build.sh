#!/usr/bin/env bash
# Builds krew (the kubectl plugin manager, the version go.mod pins) from the Go module proxy,
# once, and caches the binary under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/orrery/krew/<key>/krew
# where <key> hashes go.mod, go.sum, this script, tests/lib/go-tool.sh and the Go version.
# Prints that directory as the last line on stdout:
#   BIN=$(tests/krew/build.sh) && KREW_ROOT=/tmp/k "$BIN/krew" version
# Progress goes to stderr. A cold build takes under a minute on 2 cores; a cached run returns at
# once. The plugin's krew manifest test (tests/tests/krew.rs) installs kubectl orrery with it.
#
# Environment: GO (go binary; default: go on PATH, else /usr/local/go/bin/go),
# KREW_CACHE_DIR (overrides the cache root), KREW_REBUILD=1 (ignore the cache).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# shellcheck source=../lib/go-tool.sh
. ../lib/go-tool.sh

krew_version="$(awk '$1 == "sigs.k8s.io/krew" { print $2; exit }' go.mod)"
[[ "$krew_version" =~ ^v0\.[0-9]+\.[0-9]+$ ]] || { echo "krew/build.sh: cannot read the sigs.k8s.io/krew version from go.mod" >&2; exit 1; }

# `krew version` reports what internal/version holds.
go_tool_build krew sigs.k8s.io/krew/cmd/krew \
	"-s -w -X sigs.k8s.io/krew/internal/version.gitTag=$krew_version" \
	"${KREW_CACHE_DIR:-}" "${KREW_REBUILD:-}" "under a minute"
