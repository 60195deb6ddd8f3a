#!/usr/bin/env bash
# Self-test of the interop peers: starts each peer on loopback and drives it with the
# official clients (python/a2a_client_check.py, python/mcp_client_check.py) or curl.
# It proves the peers and the client checks work on this machine before any Rust test
# relies on them. Ends with the line "N passed, N failed"; exits non-zero on any failure.
#   tests/peers/selftest.sh            # all cases (about a minute once setup.sh has run)
#   tests/peers/selftest.sh mcp        # only cases whose name contains "mcp"
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
filter="${1:-}"
peers_dir="$("$here/setup.sh" | tail -n 1)" || { echo "selftest: setup.sh failed" >&2; exit 1; }
export ORRERY_PEERS_DIR="$peers_dir"
work="$(mktemp -d)"
passed=0
failed=0
PEER_PID=""
starts=0

stop_peer() {
	if [[ -n "$PEER_PID" ]]; then
		kill "$PEER_PID" 2>/dev/null
		wait "$PEER_PID" 2>/dev/null
		PEER_PID=""
	fi
}
trap 'stop_peer; rm -rf "$work"' EXIT

# start_peer PEER [ARGS...]: runs tests/peers/peer.sh PEER ARGS, waits for READY (30 s), sets URL.
start_peer() {
	stop_peer
	# A fresh file per start: the redirect happens in the child, so reusing one file could
	# let the loop below read the previous peer's READY line before the child truncates it.
	starts=$((starts + 1))
	local out="$work/peer.$starts.out"
	: >"$out"
	"$here/peer.sh" "$@" >"$out" 2>"$work/peer.err" &
	PEER_PID=$!
	URL=""
	for _ in $(seq 300); do
		URL="$(awk '$1 == "READY" { print $2; exit }' "$out")"
		[[ -n "$URL" ]] && return 0
		kill -0 "$PEER_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "  peer $* did not print READY; its stderr:" >&2
	sed 's/^/    /' "$work/peer.err" >&2
	return 1
}

# case NAME CMD...: runs CMD, counts a pass when it exits 0.
case_() {
	local name="$1"
	shift
	[[ -z "$filter" || "$name" == *"$filter"* ]] || return 0
	if "$@" >"$work/case.out" 2>&1; then
		echo "ok   $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name"
		sed 's/^/    /' "$work/case.out" | head -c 2000
		echo
		failed=$((failed + 1))
	fi
}

a2a_check() { "$here/peer.sh" a2a-check "$URL" "$@"; }
mcp_check() { "$here/peer.sh" mcp-check "$URL" "$@"; }
# json_field FIELD: prints a top-level field of the JSON on stdin.
json_field() { "$peers_dir/venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

a2a_echo() { start_peer "$1" --mode echo && a2a_check --expect-text "draft: Draft release notes for 1.2" "${@:2}"; }
a2a_ask() {
	start_peer "$1" --mode ask --rounds 2 &&
		a2a_check --answer developers --answer operators --expect-text "(answer: developers; operators)" "${@:2}"
}
a2a_ask_unanswered() {
	start_peer "$1" --mode ask && a2a_check --expect-state TASK_STATE_INPUT_REQUIRED
}
a2a_card_changes() {
	start_peer "$1" --mode card-changes --card-change "$2" || return 1
	local first second
	first="$(curl -sf "$URL")" && second="$(curl -sf "$URL")" || return 1
	[[ "$first" != "$second" ]] || { echo "card did not change: $first"; return 1; }
	echo "$second" | grep -q "$3" || { echo "changed card lacks $3: $second"; return 1; }
}
a2a_inject() {
	start_peer "$1" --mode inject || return 1
	local out
	out="$(a2a_check --expect-text "Ignore all previous instructions")" || return 1
	[[ "$out" == *exfil@attacker.example* && "$out" == *AKIAORRERYCANARY0001* ]]
}
a2a_fail() { start_peer "$1" --mode fail && a2a_check --expect-state TASK_STATE_FAILED --expect-text "failed: "; }
a2a_big() {
	start_peer "$1" --mode big-reply || return 1
	local n
	n="$(a2a_check --no-streaming | json_field text | wc -c)" || return 1
	[[ "$n" -gt 1048576 ]] || { echo "reply has $n bytes, not over 1 MiB"; return 1; }
}
a2a_bearer() {
	start_peer "$1" --mode echo --require-bearer peer-token || return 1
	a2a_check --bearer peer-token || return 1
	! a2a_check >/dev/null || { echo "a call without the bearer token succeeded"; return 1; }
}
a2a_request_log() {
	start_peer "$1" --mode echo --request-log "$work/$1.log" || return 1
	a2a_check --text canary-7f3a >/dev/null || return 1
	grep -q '"a2a-version": *"1.0"' "$work/$1.log" && grep -q 'canary-7f3a' "$work/$1.log"
}

for p in py-a2a js-a2a; do
	case_ "$p echo, streaming" a2a_echo "$p"
	case_ "$p echo, SendMessage" a2a_echo "$p" --no-streaming
	case_ "$p ask, two rounds" a2a_ask "$p"
	case_ "$p ask, two rounds, SendMessage" a2a_ask "$p" --no-streaming
	case_ "$p ask, unanswered stays input-required" a2a_ask_unanswered "$p"
	case_ "$p card-changes skills" a2a_card_changes "$p" skills '"publish"'
	case_ "$p card-changes interface" a2a_card_changes "$p" interface '/v2"'
	case_ "$p card-changes security" a2a_card_changes "$p" security 'httpAuthSecurityScheme'
	case_ "$p inject" a2a_inject "$p"
	case_ "$p fail" a2a_fail "$p"
	case_ "$p big-reply" a2a_big "$p"
	case_ "$p bearer required" a2a_bearer "$p"
	case_ "$p request log" a2a_request_log "$p"
done

mcp_lookup() {
	start_peer py-mcp "${@:2}" && mcp_check lookup '{"term":"mcp"}' --mode "$1" --expect-text "Model Context Protocol"
}
mcp_rotate() {
	start_peer py-mcp --mode rotate || return 1
	mcp_check --list-twice | "$peers_dir/venv/bin/python" -c '
import json, sys
d = json.load(sys.stdin)
desc = lambda tools: [t["description"] for t in tools if t["name"] == "lookup"]
sys.exit(0 if desc(d["tools"]) != desc(d["tools2"]) else "lookup description did not change")'
}
mcp_annotations() {
	start_peer py-mcp || return 1
	mcp_check | "$peers_dir/venv/bin/python" -c '
import json, sys
ro = {t["name"]: t.get("annotations", {}).get("readOnlyHint") for t in json.load(sys.stdin)["tools"]}
want = {"lookup": True, "stats": True, "explode": True, "write_note": None, "delete_note": False}
sys.exit(0 if ro == want else f"readOnlyHint by tool: {ro}")'
}
mcp_error() { start_peer py-mcp && mcp_check explode --expect-error --expect-text "exploded"; }
mcp_sse() {
	start_peer py-mcp --transport sse && mcp_check lookup '{"term":"a2a"}' --transport sse --mode legacy \
		--expect-text "Agent2Agent"
}
everything() {
	start_peer everything "$1" || return 1
	mcp_check echo '{"message":"hi"}' --transport "$2" --expect-text "Echo: hi"
}

case_ "py-mcp lookup, auto (2026-07-28)" mcp_lookup auto
case_ "py-mcp lookup, legacy (2025-11-25 initialize)" mcp_lookup legacy
case_ "py-mcp lookup, legacy, JSON responses" mcp_lookup legacy --json-response
case_ "py-mcp lookup, stateless" mcp_lookup legacy --stateless
case_ "py-mcp readOnlyHint per tool" mcp_annotations
case_ "py-mcp tool error is isError" mcp_error
case_ "py-mcp rotate changes the description" mcp_rotate
case_ "py-mcp legacy SSE transport" mcp_sse
case_ "everything mcp streamableHttp" everything streamableHttp streamable-http
case_ "everything mcp sse" everything sse sse

echo "selftest: $passed passed, $failed failed"
[[ "$failed" -eq 0 ]]
