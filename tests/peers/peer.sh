#!/usr/bin/env bash
# Runs one interop peer (or an official-client check) from the cache that setup.sh fills,
# installing it first if needed. The peer replaces this shell (exec), so the PID a test
# spawned is the peer's own and killing it stops the peer.
#
#   tests/peers/peer.sh py-a2a     [a2a_agent.py options]      # a2a-sdk 1.3 agent
#   tests/peers/peer.sh js-a2a     [a2a_agent.mjs options]     # @a2a-js/sdk 1.3 agent
#   tests/peers/peer.sh py-mcp     [mcp_server.py options]     # mcp 2.3 MCPServer
#   tests/peers/peer.sh everything [streamableHttp|sse] [--port N]   # server-everything
#   tests/peers/peer.sh a2a-check  CARD_URL [options]          # official A2A client
#   tests/peers/peer.sh mcp-check  URL [TOOL [JSON_ARGS]] [options]  # official MCP client
#
# Servers print `READY <url>` on stdout when they accept connections; see README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -ge 1 ]] || { sed -n '2,14p' "${BASH_SOURCE[0]}" >&2; exit 2; }
peer="$1"
shift
peers_dir="$("$here/setup.sh" | tail -n 1)"
export ORRERY_PEERS_DIR="$peers_dir"
py="$peers_dir/venv/bin/python"
node="${NODE:-node}"

case "$peer" in
py-a2a) exec "$py" "$here/python/a2a_agent.py" "$@" ;;
js-a2a) exec "$node" "$here/node/a2a_agent.mjs" "$@" ;;
py-mcp) exec "$py" "$here/python/mcp_server.py" "$@" ;;
everything) exec "$node" "$here/node/everything.mjs" "$@" ;;
a2a-check) exec "$py" "$here/python/a2a_client_check.py" "$@" ;;
mcp-check) exec "$py" "$here/python/mcp_client_check.py" "$@" ;;
*)
	echo "peer.sh: unknown peer '$peer' (py-a2a, js-a2a, py-mcp, everything, a2a-check, mcp-check)" >&2
	exit 2
	;;
esac
