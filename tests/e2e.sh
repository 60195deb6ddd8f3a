#!/usr/bin/env bash
# Runs a command with a test Kubernetes control plane up (kube-apiserver v1.36.3, etcd,
# kube-controller-manager; see tests/testenv/README.md), then stops it and checks that nothing
# is left running.
#
#   tests/e2e.sh                                  # runs: cargo test --workspace
#   tests/e2e.sh cargo test --workspace --locked
#   tests/e2e.sh cargo test -p orrery-tests --test e2e_kubectl
#
# 1. gets the testenv binaries: tests/testenv/build.sh (cached; a cold build needs Go and
#    takes minutes);
# 2. starts `testenv up --exit-on-stdin-eof` in the background: it stops when this script's end
#    of its stdin pipe closes (so also if this script is killed), or when this script exits;
# 3. waits for its READY line and exports ORRERY_TESTENV_KUBECONFIG (every e2e test binary then
#    uses this one control plane instead of starting its own) and ORRERY_TESTENV_BIN;
# 4. runs the command in a session of its own;
# 5. stops the control plane and fails if one of its processes, or any process of the command's
#    session (e.g. a pod executor's container process), is still running (they are listed,
#    then killed).
#
# If ORRERY_TESTENV_KUBECONFIG is already set, the command just runs against that control plane.
# ORRERY_TESTENV_KEEP=1 keeps test namespaces and the control plane's directory (logs, etcd
# data); the directory is also kept when the command fails. Exit status: the command's, or 1
# when the control plane did not start or processes were left behind.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $# -eq 0 ]]; then
    set -- cargo test --workspace
fi

if [[ -n "${ORRERY_TESTENV_KUBECONFIG:-}" ]]; then
    echo "e2e: using the control plane of ORRERY_TESTENV_KUBECONFIG=${ORRERY_TESTENV_KUBECONFIG}" >&2
    exec "$@"
fi

keep=0
if [[ -n "${ORRERY_TESTENV_KEEP:-}" && "${ORRERY_TESTENV_KEEP}" != 0 ]]; then
    keep=1
fi

start=$SECONDS
bin=$("${root}/tests/testenv/build.sh" | tail -n 1)
if [[ ! -x "${bin}/testenv" || ! -x "${bin}/kubectl" ]]; then
    echo "e2e: tests/testenv/build.sh gave ${bin}, which has no testenv and kubectl" >&2
    exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/orrery-e2e.XXXXXX")
mkfifo "${dir}/stdin"
# Opening a FIFO blocks until both ends are open: start the reader first.
"${bin}/testenv" up --dir "${dir}/cp" --exit-on-stdin-eof \
    <"${dir}/stdin" >"${dir}/up.out" 2>"${dir}/up.err" &
up_pid=$!
exec {up_stdin}>"${dir}/stdin"

cmd_pid=
status=0

stop_control_plane() {
    if [[ -n "${up_stdin:-}" ]]; then
        exec {up_stdin}>&-
        up_stdin=
    fi
    local waited=0
    while kill -0 "${up_pid}" 2>/dev/null && ((waited < 300)); do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "${up_pid}" 2>/dev/null; then
        echo "e2e: testenv up (pid ${up_pid}) did not stop within 30s; sending SIGTERM" >&2
        kill -TERM "${up_pid}" 2>/dev/null || true
    fi
    wait "${up_pid}" 2>/dev/null || true
}

# Lists the processes of the command's session and of the control plane still running, then
# kills them; returns 1 if there were any.
check_leftovers() {
    local left=() pid waited=0
    # Helpers that clean up once the tests' end closes their stdin (the throwaway PostgreSQL
    # server stops and removes its directory) get up to 10 s to finish on their own.
    while [[ -n "${cmd_pid}" ]] && ((waited < 100)) && [[ -n "$(ps -o pid= -s "${cmd_pid}" 2>/dev/null)" ]]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    if [[ -n "${cmd_pid}" ]]; then
        while read -r pid; do
            [[ -n "${pid}" ]] && left+=("${pid}")
        done < <(ps -o pid= -s "${cmd_pid}" 2>/dev/null || true)
    fi
    if [[ -f "${dir}/cp/env" ]]; then
        local key
        for key in TESTENV_PID TESTENV_APISERVER_PID TESTENV_KCM_PID; do
            pid=$(sed -n "s/^${key}=//p" "${dir}/cp/env")
            if [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null; then
                left+=("${pid}")
            fi
        done
    fi
    if ((${#left[@]} == 0)); then
        return 0
    fi
    echo "e2e: FAILED: processes left behind:" >&2
    ps -o pid=,args= -p "$(IFS=,; echo "${left[*]}")" >&2 || true
    for pid in "${left[@]}"; do
        kill -KILL "${pid}" 2>/dev/null || true
    done
    return 1
}

finish() {
    local code=$?
    trap - EXIT INT TERM
    if [[ -n "${cmd_pid}" ]] && kill -0 "${cmd_pid}" 2>/dev/null; then
        # Interrupted: stop the command's whole session (its process group is its pid).
        kill -TERM -- "-${cmd_pid}" 2>/dev/null || true
        wait "${cmd_pid}" 2>/dev/null || true
    fi
    local stopped=$SECONDS
    stop_control_plane
    echo "e2e: control plane stopped in $((SECONDS - stopped))s" >&2
    if ! check_leftovers; then
        code=1
    fi
    if ((code == 0 && keep == 0)); then
        rm -rf "${dir}"
    else
        echo "e2e: control plane directory (logs: cp/logs/) kept in ${dir}" >&2
    fi
    exit "${code}"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Wait for the one status line (READY ... or FAILED ...).
ready=
for _ in $(seq 1 1800); do
    if (($(wc -l <"${dir}/up.out") >= 1)); then
        ready=$(head -n 1 "${dir}/up.out")
        break
    fi
    kill -0 "${up_pid}" 2>/dev/null || break
    sleep 0.1
done
if [[ "${ready}" != READY* ]]; then
    echo "e2e: the control plane did not start: ${ready:-no status line}" >&2
    tail -n 30 "${dir}/up.err" >&2 || true
    exit 1
fi
kubeconfig=
for field in ${ready}; do
    case "${field}" in
    kubeconfig=*) kubeconfig=${field#kubeconfig=} ;;
    esac
done
echo "e2e: control plane up in $((SECONDS - start))s: ${ready}" >&2

export ORRERY_TESTENV_KUBECONFIG="${kubeconfig}"
export ORRERY_TESTENV_BIN="${bin}"

# The command runs in the background (so INT/TERM reach the trap at once) in its own session,
# without the control plane's stdin pipe (a process holding it would keep the control plane up).
setsid "$@" {up_stdin}>&- &
cmd_pid=$!
wait "${cmd_pid}" || status=$?
echo "e2e: $* exited ${status} after $((SECONDS - start))s" >&2
exit "${status}"
