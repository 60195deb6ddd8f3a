# Builds one Go command of the calling directory's go.mod (Helm, krew) from the Go module
# proxy, once, and caches it under ${XDG_CACHE_HOME:-$HOME/.cache}/orrery/<name>/<key>/<name>,
# where <key> hashes go.mod, go.sum, the calling script, this file and the Go version; prints
# that directory as the last line on stdout. Sourced by tests/helm/build.sh and
# tests/krew/build.sh, each from its own directory:
#   go_tool_build NAME PACKAGE LDFLAGS CACHE_DIR REBUILD ESTIMATE
# CACHE_DIR: the cache root (empty: the default above); REBUILD=1 ignores the cache.

go_tool_build() {
	local name="$1" package="$2" ldflags="$3" cache_dir="$4" rebuild="$5" estimate="$6"
	local go="${GO:-}"
	if [[ -z "$go" ]]; then
		if command -v go >/dev/null 2>&1; then go="$(command -v go)"; else go=/usr/local/go/bin/go; fi
	fi
	[[ -x "$go" ]] || { echo "$name/build.sh: no Go toolchain (set GO=/path/to/go)" >&2; return 1; }

	local key
	key="$(
		{
			"$go" env GOVERSION GOOS GOARCH
			for f in go.mod go.sum build.sh "${BASH_SOURCE[0]}"; do
				printf '%s\n' "$(basename "$f")"
				cat "$f"
			done
		} | sha256sum | cut -c1-16
	)"
	local cache_root="${cache_dir:-${XDG_CACHE_HOME:-$HOME/.cache}/orrery/$name}"
	local bin="$cache_root/$key"

	if [[ "$rebuild" != 1 && -f "$bin/.complete" && -x "$bin/$name" ]]; then
		echo "$bin"
		return 0
	fi

	mkdir -p "$cache_root"
	# One build at a time per cache (parallel test binaries may all call this).
	exec 9>"$cache_root/.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ "$rebuild" != 1 && -f "$bin/.complete" && -x "$bin/$name" ]]; then
		echo "$bin"
		return 0
	fi

	local tmp
	tmp="$(mktemp -d "$cache_root/.build.XXXXXX")"
	echo "$name/build.sh: building $name into $bin (cold: $estimate)" >&2
	local start=$SECONDS
	if ! CGO_ENABLED=0 "$go" build -trimpath -ldflags "$ldflags" -o "$tmp/$name" "$package"; then
		rm -rf "$tmp"
		return 1
	fi
	touch "$tmp/.complete"
	rm -rf "$bin"
	mv "$tmp" "$bin"
	echo "$name/build.sh: built in $((SECONDS - start))s" >&2
	# Keep the three most recent builds (other checkouts may use other keys).
	ls -1dt "$cache_root"/*/ 2>/dev/null | tail -n +4 | while read -r old; do
		[[ -f "$old/.complete" ]] && rm -rf "$old"
	done
	echo "$bin"
}
