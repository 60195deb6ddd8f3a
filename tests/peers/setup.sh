#!/usr/bin/env bash
# Installs the interop peers (servers and SDKs nobody here wrote) from the
# package registries, once, into a cache keyed by the lockfiles:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/orrery/peers/<key>/
#     venv/               Python venv: a2a-sdk 1.3, mcp 2.3, uvicorn, httpx
#                         (pip --require-hashes -r python/requirements.txt)
#     node/node_modules/  npm ci of node/package-lock.json: @a2a-js/sdk 1.3,
#                         @modelcontextprotocol/server-everything, express
# <key> is the sha256 of this script, the lockfiles, the Python minor version,
# the Node major version and the machine architecture. The peer programs
# themselves (python/*.py, node/*.mjs) run from the work tree and are not part
# of the key. Prints the peer directory as the last line on stdout:
#   PEERS=$(tests/peers/setup.sh) && "$PEERS/venv/bin/python" tests/peers/python/a2a_agent.py --mode echo
# Progress goes to stderr. A cached run returns at once (see README.md for the
# measured cold and warm times).
#
# Environment: PYTHON (interpreter; default python3), NODE / NPM (default node
# and npm on PATH), PEERS_CACHE_DIR (overrides the cache root),
# PEERS_REINSTALL=1 (ignore and replace the cached install). The three most recently used
# installs under the cache root are kept; older ones are removed after an install.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

python="${PYTHON:-python3}"
node="${NODE:-node}"
npm="${NPM:-npm}"
die() { echo "setup.sh: $*" >&2; exit 1; }

command -v "$python" >/dev/null 2>&1 || die "no Python interpreter '$python' (set PYTHON=/path/to/python3.11)"
command -v "$node" >/dev/null 2>&1 || die "no Node.js '$node' (Node 20 or later is needed; set NODE=)"
command -v "$npm" >/dev/null 2>&1 || die "no npm '$npm' (set NPM=)"

# One interpreter start (a pyenv shim costs ~0.4 s each): print X.Y, fail if older than 3.10.
py_version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2]); sys.exit(sys.version_info < (3, 10))')" ||
	die "Python ${py_version:-?} is too old: a2a-sdk 1.3 and mcp 2.3 need 3.10 or later (set PYTHON=)"
node_version="$("$node" --version)"
node_major="${node_version#v}"
node_major="${node_major%%.*}"
[[ "$node_major" =~ ^[0-9]+$ && "$node_major" -ge 20 ]] ||
	die "Node $node_version is too old: @a2a-js/sdk 1.3 needs Node 20 or later (set NODE=)"

lockfiles=(setup.sh python/requirements.txt node/package.json node/package-lock.json)
key="$(
	{
		printf 'python %s\nnode %s\narch %s\n' "$py_version" "$node_major" "$(uname -m)"
		for f in "${lockfiles[@]}"; do
			printf '%s\n' "$f"
			cat "$f"
		done
	} | sha256sum | cut -c1-16
)"
cache_root="${PEERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/orrery/peers}"
dir="$cache_root/$key"

cached() {
	[[ -f "$dir/.complete" && -x "$dir/venv/bin/python" && -d "$dir/node/node_modules/@a2a-js/sdk" ]]
}

if [[ "${PEERS_REINSTALL:-}" != 1 ]] && cached; then
	touch "$dir/.complete" 2>/dev/null || true # recency, for the pruning below
	echo "$dir"
	exit 0
fi

mkdir -p "$cache_root"
# One install at a time per cache root (parallel test binaries may all call this).
exec 9>"$cache_root/.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi
if [[ "${PEERS_REINSTALL:-}" != 1 ]] && cached; then
	echo "$dir"
	exit 0
fi

# A venv records its own path, so it is built in place; a half-built
# directory (no .complete marker) is removed first.
rm -rf "$dir"
mkdir -p "$dir/node"
trap 'rm -rf "$dir"' EXIT
start=$SECONDS
echo "setup.sh: installing interop peers into $dir (Python $py_version, Node $node_version)" >&2

"$python" -m venv "$dir/venv" >&2
# Every requirement is pinned with its hashes; only wheels are accepted, so no
# package builds anything from source on this machine.
"$dir/venv/bin/python" -m pip install --no-input --quiet --require-hashes --only-binary=:all: \
	-r python/requirements.txt >&2

cp node/package.json node/package-lock.json "$dir/node/"
# No package in the lock has an install script; --ignore-scripts keeps it so.
(cd "$dir/node" && "$npm" ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2

# Smoke check: the SDKs the peer programs use import.
"$dir/venv/bin/python" -c 'import a2a.server.routes, a2a.client, mcp.server.mcpserver, mcp.client, uvicorn, httpx' >&2
(cd "$dir/node" && "$node" -e '
for (const m of ["@a2a-js/sdk", "@a2a-js/sdk/server", "@a2a-js/sdk/server/express", "express"]) require.resolve(m);
require.resolve("@modelcontextprotocol/server-everything/package.json");
') >&2

touch "$dir/.complete"
trap - EXIT
echo "setup.sh: installed in $((SECONDS - start))s" >&2
# Keep the three most recently used installs (other branches' lockfiles); drop older ones.
# shellcheck disable=SC2012 # the names are hex keys; ls -t orders by last use (.complete mtime)
while IFS= read -r marker; do
	[[ "${marker%/.complete}" == "$dir" ]] || rm -rf "${marker%/.complete}"
done < <(ls -1t "$cache_root"/*/.complete 2>/dev/null | tail -n +4)
echo "$dir"
