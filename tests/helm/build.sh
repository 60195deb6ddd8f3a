#!/usr/bin/env bash
# Builds Helm (v4, the version go.mod pins) from the Go module proxy, once, and caches the binary
# under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/orrery/helm/<key>/helm
# where <key> hashes go.mod, go.sum, this script, tests/lib/go-tool.sh and the Go version.
# Prints that directory as the last line on stdout:
#   BIN=$(tests/helm/build.sh) && "$BIN/helm" lint charts/orrery
# Progress goes to stderr. A cold build takes about 3 minutes on 2 cores; a cached run returns
# at once. The chart's tests (tests/tests/chart.rs) and `orrery up` use this binary.
#
# Environment: GO (go binary; default: go on PATH, else /usr/local/go/bin/go),
# HELM_CACHE_DIR (overrides the cache root), HELM_REBUILD=1 (ignore the cache).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# shellcheck source=../lib/go-tool.sh
. ../lib/go-tool.sh

helm_version="$(awk '$1 == "helm.sh/helm/v4" { print $2; exit }' go.mod)"
[[ "$helm_version" =~ ^v4\.[0-9]+\.[0-9]+$ ]] || { echo "helm/build.sh: cannot read the helm.sh/helm/v4 version from go.mod" >&2; exit 1; }

# `helm version` reports what internal/version holds; without -X it says "v4.3" and no commit.
go_tool_build helm helm.sh/helm/v4/cmd/helm \
	"-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version" \
	"${HELM_CACHE_DIR:-}" "${HELM_REBUILD:-}" "about 3 minutes"
