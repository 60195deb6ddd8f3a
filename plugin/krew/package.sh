#!/usr/bin/env bash
# Packs `kubectl orrery` for krew: the two binaries of a build of this machine's platform into
#   OUT_DIR/kubectl-orrery_<os>_<arch>.tar.gz
# (the archive name plugin/krew/orrery.yaml expects), and prints the archive's path and its
# sha256 on one line. For a release, on each platform:
#   cargo build --release -p kubectl-orrery && plugin/krew/package.sh dist target/release
# Usage: package.sh OUT_DIR BIN_DIR   (BIN_DIR holds kubectl-orrery and kubectl_complete-orrery)
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 OUT_DIR BIN_DIR" >&2; exit 2; }
out="$1"
bin="$2"
for f in kubectl-orrery kubectl_complete-orrery; do
	[[ -x "$bin/$f" ]] || { echo "package.sh: no $bin/$f: build it first (cargo build --release -p kubectl-orrery)" >&2; exit 1; }
done

case "$(uname -s)" in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) echo "package.sh: no krew platform for $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) echo "package.sh: no krew platform for $(uname -m)" >&2; exit 1 ;;
esac

mkdir -p "$out"
archive="$out/kubectl-orrery_${os}_${arch}.tar.gz"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp "$bin/kubectl-orrery" "$bin/kubectl_complete-orrery" "$stage/"
# Reproducible: fixed owner, order and times, so one build packs to one sha256.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$stage" -cf - \
	kubectl-orrery kubectl_complete-orrery | gzip -n > "$archive"
echo "$archive $(sha256sum "$archive" | cut -d' ' -f1)"
