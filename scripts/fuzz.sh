#!/usr/bin/env bash
# Coverage-guided fuzzing (issue 27 §3) on the stable toolchain: the targets of fuzz/ built
# with rustc's sanitizer-coverage passes (the flags cargo-fuzz passes, without its nightly-only
# sanitizer) and run by libFuzzer (libfuzzer-sys builds it from source), each for a bounded
# time.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # default: 20 seconds each, every target
#   scripts/fuzz.sh 3600 jwks                 # an hour on one target
#
# Targets: jwks (signed cards' key sets and protected headers), manifest (YAML and JSON
# manifests and the validator), import (the seeds' JSON import and its round trip), json (the
# duplicate-key parser against serde_json), sidecar (the bodies the sidecar reads: event batches,
# approval asks and decisions); and the runner's (orrery_runner::fuzzing says what each checks):
# sse (remotes' event streams), json_rpc (requests to the A2A server, remotes' replies),
# agent_card (remote cards and their signatures), model_reply (each provider's replies),
# ca_bundle (trusted CA bundles). Each starts from the committed corpus (crds/tests/fuzz-corpus/
# or runner/tests/fuzz-corpus/, which `cargo test` replays) and a working corpus kept in the
# cache (it grows across runs; never committed). An input that crashes a target is written to
# fuzz/artifacts/<target>/ and the script fails, saying how to keep it: copy it into the
# committed corpus, so `cargo test` replays it from then on, and fix the parser.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-20}"
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(jwks manifest import json sidecar sse json_rpc agent_card model_reply ca_bundle)

cache="${XDG_CACHE_HOME:-$HOME/.cache}/orrery"
host="$(rustc -vV | sed -n 's/^host: //p')"
# The flags are for the targets alone: with --target, build scripts and proc macros are built
# without them.
export CARGO_TARGET_DIR="${cache}/fuzz-target"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
cargo build --release --locked --quiet --manifest-path fuzz/Cargo.toml --target "${host}" --bins

seeds_of() {
	case "$1" in
	jwks) echo crds/tests/fuzz-corpus/jwks ;;
	manifest) echo crds/tests/fuzz-corpus/manifests examples/compositions ;;
	import | json) echo crds/tests/fuzz-corpus/import ;;
	sidecar) echo crds/tests/fuzz-corpus/sidecar ;;
	sse | json_rpc | agent_card | model_reply | ca_bundle) echo "runner/tests/fuzz-corpus/$1" ;;
	*)
		echo "scripts/fuzz.sh: no target $1 (jwks, manifest, import, json, sidecar, sse, json_rpc, agent_card, model_reply, ca_bundle)" >&2
		return 1
		;;
	esac
}

failed=()
for target in "${targets[@]}"; do
	seeds="$(seeds_of "${target}")"
	work="${cache}/fuzz-corpus/${target}"
	artifacts="fuzz/artifacts/${target}/"
	mkdir -p "${work}" "${artifacts}"
	echo "==> fuzz ${target}: ${seconds}s from ${seeds}"
	# shellcheck disable=SC2086 # the seed directories are words
	if ! "${CARGO_TARGET_DIR}/${host}/release/${target}" -max_total_time="${seconds}" -timeout=10 \
		-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="${artifacts}" \
		"${work}" ${seeds} 2>"${cache}/fuzz-${target}.log"; then
		failed+=("${target}")
		tail -n 40 "${cache}/fuzz-${target}.log" >&2
		echo "scripts/fuzz.sh: ${target} found an input that fails it, in ${artifacts}; copy it into" \
			"the committed corpus (${seeds%% *}/) so cargo test replays it, and fix the parser" >&2
	else
		grep -E '^stat::(number_of_executed_units|peak_rss_mb|new_units_added)' "${cache}/fuzz-${target}.log" |
			tr '\n' ' '
		echo "(corpus: $(find "${work}" -type f | wc -l) inputs)"
	fi
done
[[ ${#failed[@]} -eq 0 ]] || {
	echo "scripts/fuzz.sh: failing targets: ${failed[*]}" >&2
	exit 1
}
echo "scripts/fuzz.sh: every target ran ${seconds}s without a failure"
