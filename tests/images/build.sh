#!/usr/bin/env bash
# Builds the project's two images without a daemon, from binaries that are already built:
#
#   localhost/orrery/runner:dev    the `orrery` binary       (package orrery-runner)
#   localhost/orrery/operator:dev  the `orrery-operator` binary (package orrery-operator)
#
# Usage: tests/images/build.sh [BIN_DIR [OUT_DIR]]
#   BIN_DIR  (or ORRERY_IMAGES_BIN_DIR) where `orrery` and `orrery-operator` are;
#            default ${CARGO_TARGET_DIR:-<repo>/target}/debug
#   OUT_DIR  (or ORRERY_IMAGES_OUT_DIR) where the OCI archives go (runner.tar, operator.tar);
#            default ${XDG_CACHE_HOME:-$HOME/.cache}/orrery/images
#   ORRERY_IMAGES_RUNNER_BIN  the runner image's binary when it is not BIN_DIR/orrery: e.g. the
#            build operator/Dockerfile ships (static, without the `cli` feature; the tests build
#            it with tests/src/images.rs `pod_build_binary`)
#   ORRERY_IMAGES_CONSOLE_DIR  the built web console the operator image carries at
#            /usr/share/orrery/console (the Dockerfile's `console` stage); default <repo>/web/dist,
#            which `cd web && npm ci --engine-strict && npm run build` makes (scripts/test.sh's web
#            step). The build fails when it has no index.html.
# The last line on standard output is OUT_DIR; everything else goes to standard error.
#
# Each image is `FROM scratch` with the binary at /usr/local/bin/, exactly the shared libraries
# `ldd` lists for it plus the dynamic loader (at the paths the binary asks for), the host's CA
# bundle, /etc/passwd and /etc/group naming `nonroot` (65532) and an empty /tmp: the layout of
# the runtime stage of operator/Dockerfile (distroless cc-debian12:nonroot), which cannot be
# built here (no Docker engine, no registry to pull base images from). USER 65532:65532,
# ENTRYPOINT the binary, no shell. The operator image also holds the console's files at
# /usr/share/orrery/console, owned by root, directories 0755 and files 0644.
#
# buildah runs with the vfs driver and a private storage root under OUT_DIR/.buildah, so it
# never touches the machine's own container storage; the images are removed from it once
# written as archives. Needs root (or a user buildah can run as), buildah and ldd.
# Build the binaries first: cargo build -p orrery-runner --bin orrery -p orrery-operator
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin_dir="${1:-${ORRERY_IMAGES_BIN_DIR:-${CARGO_TARGET_DIR:-$repo/target}/debug}}"
out_dir="${2:-${ORRERY_IMAGES_OUT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/orrery/images}}"
runner_bin="${ORRERY_IMAGES_RUNNER_BIN:-$bin_dir/orrery}"
console_dir="${ORRERY_IMAGES_CONSOLE_DIR:-$repo/web/dist}"
# Where the operator image keeps the console (operator/Dockerfile; the chart's sidecar.consoleDir).
console_path=/usr/share/orrery/console
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml" | head -n 1)"

log() { echo "images: $*" >&2; }
die() { echo "images: error: $*" >&2; exit 1; }

command -v buildah >/dev/null 2>&1 \
    || die "buildah not found: apt-get install buildah (Debian 12 has 1.28)"
command -v ldd >/dev/null 2>&1 || die "ldd not found: apt-get install libc-bin"
if [ ! -f "$console_dir/index.html" ]; then
    if [ -n "${ORRERY_IMAGES_CONSOLE_DIR:-}" ]; then
        die "ORRERY_IMAGES_CONSOLE_DIR=$console_dir has no index.html: point it at a built console (web/dist)"
    fi
    die "$console_dir/index.html not found: the operator image carries the built web console; build it first: cd web && npm ci --engine-strict && npm run build (or set ORRERY_IMAGES_CONSOLE_DIR to a built console)"
fi
console_dir="$(cd "$console_dir" && pwd)"

mkdir -p "$out_dir"
out_dir="$(cd "$out_dir" && pwd)"
# One build at a time per output directory: the buildah storage below it is shared, and the
# cleanup of one build (`buildah rm --all`) would remove another's build container.
command -v flock >/dev/null 2>&1 || die "flock not found: apt-get install util-linux"
exec 9>"$out_dir/.lock"
flock 9
storage="$out_dir/.buildah"
bah=(buildah --storage-driver vfs --root "$storage/root" --runroot "$storage/run")
work="$(mktemp -d "$out_dir/.work.XXXXXX")"
cleanup() {
    # Containers of this private root are only ever ours (a bud interrupted half-way).
    "${bah[@]}" rm --all >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# The files a dynamically linked binary needs: `ldd` lines `name => /path (addr)` and the
# loader's `/path (addr)`; the vDSO has no file.
shared_libraries() {
    local out
    out="$(ldd "$1" 2>&1)" || {
        case "$out" in
            *"not a dynamic executable"*) return 0 ;;
            *) die "ldd $1 failed: $out" ;;
        esac
    }
    if grep -q "not found" <<<"$out"; then
        die "$1 needs libraries this machine lacks: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ')"
    fi
    awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out" | sort -u
}

# Lays out the build context of one image under $work/<name>/, its binary taken from $3.
stage() {
    local name="$1" binary="$2" src="$3" ctx="$work/$1"
    [ -x "$src" ] || die "$src not found: cargo build -p orrery-runner --bin orrery -p orrery-operator (or pass the binaries' directory: $0 BIN_DIR)"
    mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/etc/ssl/certs" "$ctx/rootfs/tmp" \
        "$ctx/rootfs/home" "$ctx/home/nonroot"
    cp "$src" "$ctx/rootfs/usr/local/bin/$binary"
    chmod 0755 "$ctx/rootfs/usr/local/bin/$binary"
    local lib
    while IFS= read -r lib; do
        [ -n "$lib" ] || continue
        mkdir -p "$ctx/rootfs$(dirname "$lib")"
        cp -L "$lib" "$ctx/rootfs$lib"
    done < <(shared_libraries "$src")
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
        cp -L /etc/ssl/certs/ca-certificates.crt "$ctx/rootfs/etc/ssl/certs/ca-certificates.crt"
    fi
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
        >"$ctx/rootfs/etc/passwd"
    printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$ctx/rootfs/etc/group"
    if [ "$name" = operator ]; then
        # The console's files, read-only for 65532 (COPY --from=console in the Dockerfile).
        mkdir -p "$ctx/rootfs$console_path"
        cp -R "$console_dir/." "$ctx/rootfs$console_path/"
        chmod -R u=rwX,go=rX "$ctx/rootfs/usr/share/orrery"
    fi
    chmod 1777 "$ctx/rootfs/tmp"
    chmod 0700 "$ctx/home/nonroot"
    chown -R 0:0 "$ctx/rootfs"
    cat >"$ctx/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
COPY --chown=65532:65532 home/ /home/
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/usr/local/bin/$binary"]
EOF
}

build() {
    local name="$1" binary="$2" src="$3" title="$4" description="$5"
    local image="localhost/orrery/$name:dev" ctx="$work/$name"
    stage "$name" "$binary" "$src"
    log "building $image from $src"
    # --timestamp 0: the same binaries give the same image; --identity-label=false: no buildah
    # version label; --layers=false: one layer, nothing cached in the private storage.
    "${bah[@]}" bud --quiet --layers=false --identity-label=false --timestamp 0 \
        --label "org.opencontainers.image.title=$title" \
        --label "org.opencontainers.image.description=$description" \
        --label "org.opencontainers.image.vendor=Orrery Studio" \
        --label "org.opencontainers.image.version=$version" \
        --label "org.opencontainers.image.licenses=Apache-2.0" \
        --label "org.opencontainers.image.source=https://example.invalid/orrery-studio" \
        -f "$ctx/Containerfile" -t "$image" "$ctx" >&2
    rm -f "$out_dir/$name.tar.partial"
    "${bah[@]}" push --quiet "$image" "oci-archive:$out_dir/$name.tar.partial:$image" >&2
    mv -f "$out_dir/$name.tar.partial" "$out_dir/$name.tar"
    "${bah[@]}" rmi --force "$image" >/dev/null
    log "wrote $out_dir/$name.tar ($(du -h "$out_dir/$name.tar" | cut -f1))"
}

"${bah[@]}" rm --all >/dev/null 2>&1 || true
build runner orrery "$runner_bin" "orrery-runner" \
    "Orrery Studio runner: executes one composition run; the orrery CLI"
build operator orrery-operator "$bin_dir/orrery-operator" "orrery-operator" \
    "Orrery Studio operator and sidecar"
echo "$out_dir"
