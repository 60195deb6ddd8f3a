#!/usr/bin/env bash
# Side by side, in one session against one stub model: the 10-node pipeline of the runner's
# benchmark run by this project's runner, by LangGraph and by Google ADK. A benchmark for a
# person to run (it installs the peers from PyPI into a throwaway virtual environment); never
# run by CI. See docs/benchmarks.md for the figures and how to read them.
#
#   tests/bench/compare/run.sh            # RUNS=200 warm runs, PROCS=10 whole processes
#
# Prints, for each: the orchestration overhead per LLM node in a warm process (a run minus the
# same ten calls made straight through its own model client), and a whole process of one run
# (exec -> exit, peak RSS).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
# Cargo's target directory (the builds below run at the root, where a relative one starts).
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$root/$target ;; esac
runs=${RUNS:-200}
procs=${PROCS:-10}
tmp=$(mktemp -d)
venv=${COMPARE_VENV:-$tmp/venv}
stub_pid=
cleanup() {
    if [ -n "$stub_pid" ]; then kill "$stub_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q langgraph==1.2.22 langchain-openai==1.7.4 google-adk==2.13.0 litellm==1.110.2
fi
(cd "$root" && cargo build --release -p orrery-bench --bin bench_run)
# The whole-process figure is the runner pod's: `orrery` built as operator/Dockerfile builds the
# runner image's binary (profile dist, without the cli feature, linked statically).
host="$(rustc -vV | sed -n 's/^host: //p')"
(cd "$root" && RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" \
    cargo build --profile dist --locked --no-default-features --target "$host" \
    -p orrery-runner --bin orrery)
pod_orrery="$target/$host/dist/orrery"
# No telemetry, LiteLLM's bundled price table instead of a download at import, and no
# deprecation warnings from ADK's SequentialAgent in every process's output.
export LANGSMITH_TRACING=false LITELLM_LOCAL_MODEL_COST_MAP=True
export PYTHONWARNINGS=ignore::DeprecationWarning

# One stub for everyone, serving until its standard input closes.
mkfifo "$tmp/stub-in"
"$target/release/bench_run" --stub <"$tmp/stub-in" >"$tmp/stub-url" &
stub_pid=$!
exec 3>"$tmp/stub-in"
for _ in $(seq 100); do [ -s "$tmp/stub-url" ] && break; sleep 0.1; done
url=$(head -n1 "$tmp/stub-url")
echo "stub: $url"
"$venv/bin/pip" list 2>/dev/null | grep -E '^(langgraph|langchain-core|langchain-openai|google-adk|litellm) ' || true

# A peer whose process crashes is reported. ADK 2.13's ends with SIGSEGV in the interpreter's
# teardown, after its figures are printed: that is said and the figures stand. A crash before
# the figures fails the script, at the end, after the other measurements.
failed=
peer() {
    local status=0
    "$venv/bin/python" "$here/peers.py" "$@" >"$tmp/peer.out" || status=$?
    cat "$tmp/peer.out"
    if [ "$status" -eq 0 ]; then
        return
    elif grep -q -e "overhead per LLM node" -e "processes, exec -> exit" "$tmp/peer.out"; then
        echo "$1 $2: the process exited with status $status after printing its figures" >&2
    else
        echo "$1 $2: exited with status $status before its figures" >&2
        failed="$failed $1-$2"
    fi
}

echo "== warm: orchestration overhead per LLM node =="
"$target/release/bench_run" "$runs" --stub-url "$url"
peer langgraph warm "$url" "$runs"
peer adk warm "$url" "$((runs / 4))"

echo "== whole process: one 10-node run =="
"$target/release/bench_run" --process "$procs" --stub-url "$url" --orrery "$pod_orrery"
peer langgraph procs "$url" "$procs"
peer adk procs "$url" "$procs"
exec 3>&-
if [ -n "$failed" ]; then
    echo "failed:$failed" >&2
    exit 1
fi
