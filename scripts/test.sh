#!/usr/bin/env bash
# The one test command: formatting, lints, and every test of the workspace (unit tests,
# end-to-end tests against a real kube-apiserver, interop tests against the official MCP and A2A
# SDK peers).
#
#   ./scripts/test.sh
#
# What it needs and installs by itself (cached under ${XDG_CACHE_HOME:-~/.cache}/orrery/):
#   - the test control plane (Kubernetes v1.36.3 built from the Go module proxy: a cold build
#     takes about 7 minutes, later runs reuse it): tests/testenv/build.sh;
#   - the interop peers (PyPI a2a-sdk and mcp, npm server-everything and @a2a-js/sdk, from the
#     lockfiles in tests/peers/): tests/peers/setup.sh;
#   - Helm v4 (built from the Go module proxy, pinned by tests/helm/go.mod: a cold build takes
#     3 to 12 minutes, later runs reuse it): tests/helm/build.sh; the chart's tests use it;
#   - Debian packages, with apt-get (as root or through sudo), when missing: postgresql (the
#     sidecar store's tests start a throwaway server of their own, tests/src/postgres.rs),
#     buildah and runc (the images' tests build the images without a daemon and run them),
#     nftables and iproute2 (the development node's network tests), busybox-static, openssl
#     (e2e_netpol's throwaway CA), chromium and fonts-liberation (the console's Playwright tests
#     in e2e_console, which never download a browser); the list lives in
#     scripts/install-packages.sh;
#   - the web console's packages (web/package-lock.json, `npm ci --engine-strict`, Node 20.19 or
#     later; npm's cache under ${XDG_CACHE_HOME:-~/.cache}/orrery/npm), then its type check,
#     lint, Vitest tests and build into web/dist: the `web` step. It runs before the tests: the
#     operator image they build carries web/dist (tests/images/build.sh), and e2e_console runs
#     the Playwright specs with these packages.
#   - the coverage-guided fuzz targets of fuzz/ (libFuzzer through libfuzzer-sys, on the stable
#     toolchain; their build is cached in ${XDG_CACHE_HOME:-~/.cache}/orrery/fuzz-target):
#     scripts/fuzz.sh runs each of the ten for 15 seconds, the `fuzz` step.
# The control plane is started once for the whole `cargo test` run by tests/e2e.sh, which stops
# it afterwards and fails if any process was left behind.
#
# Each step runs even when an earlier one fails, so one run shows everything that is wrong; the
# script exits non-zero if any step failed and prints a summary at the end.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The golden-file, CRD-drift and generated-docs tests rewrite their files instead of comparing
# when an ORRERY_UPDATE_* variable is set (with any value), and then pass whatever changed: a
# test run with one set proves nothing, so refuse it before anything runs.
refuse_update_variables() {
    local set=()
    local name
    for name in $(compgen -e); do
        if [[ "${name}" == ORRERY_UPDATE_* ]]; then
            set+=("${name}")
        fi
    done
    if [[ ${#set[@]} -gt 0 ]]; then
        echo "scripts/test.sh: refusing to run with ${set[*]} set: an ORRERY_UPDATE_* variable makes the golden-file and drift tests rewrite their files and pass, so the run would prove nothing; unset it (regenerate files with the one test that names it, then review the diff)" >&2
        exit 2
    fi
}
refuse_update_variables

declare -a results=()
failed=0

step() {
    local name=$1
    shift
    echo
    echo "==> ${name}: $*"
    local start=$SECONDS
    if "$@"; then
        results+=("ok    ${name} ($((SECONDS - start))s)")
    else
        results+=("FAIL  ${name} ($((SECONDS - start))s)")
        failed=1
    fi
}

install_peers() {
    local dir
    dir=$(tests/peers/setup.sh | tail -n 1) || return 1
    [[ -d "${dir}" ]] || return 1
    export ORRERY_PEERS_DIR="${dir}"
    echo "interop peers: ${ORRERY_PEERS_DIR}"
}

build_control_plane() {
    local bin
    bin=$(tests/testenv/build.sh | tail -n 1) || return 1
    [[ -x "${bin}/testenv" ]] || return 1
    export ORRERY_TESTENV_BIN="${bin}"
    echo "control plane binaries: ${ORRERY_TESTENV_BIN}"
}

build_helm() {
    local bin
    bin=$(tests/helm/build.sh | tail -n 1) || return 1
    [[ -x "${bin}/helm" ]] || return 1
    export ORRERY_HELM_BIN="${bin}"
    echo "helm: ${ORRERY_HELM_BIN}/helm"
}

# Debian packages the tests need, installed once when one is missing (the list lives in
# scripts/install-packages.sh, which `orrery up` uses too).
install_packages() {
    scripts/install-packages.sh || return 1
    local bin
    bin=$(compgen -G "/usr/lib/postgresql/*/bin" | sort -V | tail -n 1)
    [[ -x "${bin}/initdb" ]] || return 1
    echo "PostgreSQL binaries: ${bin}"
}

# The runner image's binary (operator/Dockerfile) is built without the `cli` feature and linked
# statically; nothing else builds it that way, so lint it and run its command-line tests here
# (they check its command set) or it rots. Then build it as the Dockerfile does (in the debug
# profile) for e2e_runs, which runs a run with it as the runner image: built here, before the
# tests start, rather than by that test while others run beside it. The flags must stay the
# Dockerfile's (a test of tests/src/images.rs checks both files name POD_BUILD_RUSTFLAGS).
runner_pod_binary() {
    local pod=(-p orrery-runner --bin orrery --no-default-features --locked)
    local host
    host="$(rustc -vV | sed -n 's/^host: //p')"
    cargo clippy "${pod[@]}" -- -D warnings \
        && cargo clippy "${pod[@]}" --profile test -- -D warnings \
        && cargo test "${pod[@]}" \
        && RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" \
            cargo build "${pod[@]}" --target "${host}"
}

# The web console (web/): its locked packages installed afresh, then `npm run check` (type check,
# lint with no warning, the Vitest tests, the build into web/dist, which fails on anything the
# sidecar's console policy forbids). npm's cache lives beside the other caches, and
# --prefer-offline takes what it holds without asking the registry again.
web_console() {
    local cache="${XDG_CACHE_HOME:-$HOME/.cache}/orrery/npm"
    (
        cd web \
            && npm ci --engine-strict --prefer-offline --cache "${cache}" --no-audit --no-fund \
            && npm run check
    )
}

step "format" cargo fmt --all --check
step "clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
step "runner pod binary" runner_pod_binary
step "interop peers" install_peers
step "control plane" build_control_plane
step "helm" build_helm
step "debian packages" install_packages
step "web" web_console
step "tests" tests/e2e.sh cargo test --workspace --locked --no-fail-fast
step "fuzz" scripts/fuzz.sh 15

echo
echo "==> summary"
printf '  %s\n' "${results[@]}"
if [[ ${failed} -ne 0 ]]; then
    echo "scripts/test.sh: FAILED"
    exit 1
fi
echo "scripts/test.sh: all steps passed"
