#!/usr/bin/env bash
# Installs the Debian packages the tests and `orrery up` need, when missing, with apt-get (as
# root, or through sudo). One home for the list: scripts/test.sh and `orrery up` call it.
#
# Usage: scripts/install-packages.sh [PACKAGE ...]
#   no argument: everything the tests need (postgresql, buildah, runc, nftables, iproute2,
#   busybox-static, openssl, chromium and fonts-liberation for the console's browser tests);
#   with arguments: only those (e.g. `buildah runc` for `orrery up`).
# Prints the packages it installed, or nothing when all were present.
set -euo pipefail

all=(postgresql buildah runc nftables iproute2 busybox-static openssl chromium fonts-liberation)
wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=("${all[@]}")

# Whether a package's files are there (what the tests use of it).
present() {
    case "$1" in
        postgresql) compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null ;;
        buildah) command -v buildah >/dev/null ;;
        runc) command -v runc >/dev/null ;;
        nftables) command -v nft >/dev/null ;;
        iproute2) command -v ip >/dev/null ;;
        busybox-static) [[ -x /bin/busybox ]] ;;
        openssl) command -v openssl >/dev/null ;;
        # The browser binary itself (not the /usr/bin/chromium wrapper script): Playwright
        # launches it (web/playwright.config.ts) and never downloads a browser of its own.
        chromium) [[ -x /usr/lib/chromium/chromium ]] ;;
        # Arial's and Times' metrics, so text in the console's screenshots has real glyphs.
        fonts-liberation) [[ -d /usr/share/fonts/truetype/liberation ]] ;;
        *) echo "install-packages: unknown package $1 (known: ${all[*]})" >&2; exit 2 ;;
    esac
}

missing=()
for p in "${wanted[@]}"; do
    present "$p" || missing+=("$p")
done
[[ ${#missing[@]} -gt 0 ]] || exit 0

sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || {
        echo "install-packages: ${missing[*]} missing; run as root or install sudo" >&2
        exit 1
    }
    sudo=(sudo)
fi
command -v apt-get >/dev/null || {
    echo "install-packages: ${missing[*]} missing and no apt-get here: install them with your package manager" >&2
    exit 1
}
echo "installing ${missing[*]}"
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
