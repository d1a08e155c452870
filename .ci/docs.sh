#!/usr/bin/env bash
# Builds the documentation site (scripts/docs.sh: mdBook from docs/ into target/book) and checks it:
#
# 1. every internal link and anchor of the built site (scripts/check-book-links.py: no network; a link to a
#    missing page or a missing #anchor fails, named);
# 2. the lists of stores, settings and error codes of docs/reference.md (README.md's tables), docs/faq.md, the
#    language pages and docs/stores.md, against the code's own tables (scripts/check-docs-tables.py);
# 3. the code samples of every page of docs/ compiled or syntax-checked (Rust, Java, Go, C, Python, JavaScript;
#    the conventions, and ```LANG,ignore for a fragment, are below and in scripts/docs-samples.py);
# 4. the command lines of the start page (docs/start.md): every line of its ```sh blocks that starts with `cosid `
#    (but `cosid serve`, which runs until stopped) runs against the built CLI, in a temporary state folder with
#    its own SQLite store. The CLI is COSID_DOCS_CLI, else target/release/cosid, else target/debug/cosid; with
#    none, this part is skipped and says so (this script builds nothing but the site).
#
#     bash .ci/docs.sh
#
# Needs cargo (to install mdBook once, into ${CARGO_TARGET_DIR:-target}/docs-tools) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
t0=$(date +%s)

bash scripts/docs.sh

t1=$(date +%s)
python3 scripts/check-book-links.py "$root/target/book"
echo "docs: link check took $(($(date +%s) - t1)) s" >&2

# The docs' lists of stores, settings and error codes against the code's own tables (parsed from core/src: the
# scheme match of store/url.rs, host/settings.rs's SETTINGS, host/code.rs's ErrorCode): a store, setting or code
# missing from a page that lists them, or one the code does not have, fails, named.
python3 scripts/check-docs-tables.py

# The code samples of docs/*.md (scripts/docs-samples.py extracts them; its header has the conventions), each
# checked by the tool of its language; a tool that is missing is skipped and said:
# - C: cc -fsyntax-only against the committed include/cosid.h (a fragment, with no `main`, wrapped in one);
# - Python: parsed (ast); JavaScript: node --check (as a module: top-level await allowed);
# - Rust: every sample an example of one throwaway crate (target/docs-samples/rust, cosid by path), one debug
#   `cargo build --examples` in the workspace's target dir, so the dependencies are built already;
# - Java: javac (a JDK 22+, bindings/java/jdk.sh) against the binding's sources, bindings/java/src/main/java;
# - Go: go vet (type-checks, runs cgo on the committed include/cosid.h; links nothing) against bindings/go.
# A sample that is only a fragment is written ```rust,ignore (```java,ignore, ```go,ignore) and skipped: use it
# sparingly, a sample a user copies should compile. A Rust sample with no `fn main` is a main's body; a Java
# sample with no class is a method's body (its imports on top); a Go sample with no `package` is a function's
# body returning error (its imports on top), or the file itself if it declares `func main`.
samples="$root/target/docs-samples"
rm -rf "$samples"
mkdir -p "$samples"
python3 scripts/docs-samples.py "$samples" >"$samples/index"
sample_failed=0
sample_fail() {
    echo "docs: FAILED: $1" >&2
    sample_failed=1
}
checked=0
while read -r lang file page; do
    f="$samples/$file"
    case "$lang" in
    c)
        tool=cc
        cmd=(cc -fsyntax-only -Wall -Wextra -Werror -Iinclude "$f")
        case "$f" in *.fragment.c) cmd+=(-Wno-unused-variable -Wno-unused-but-set-variable -Wno-unused-function) ;; esac
        ;;
    python) tool=python3; cmd=(python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$f") ;;
    js) tool=node; cmd=(node --check "$f") ;;
    *) continue ;;
    esac
    if ! command -v "$tool" >/dev/null; then
        echo "docs: skipping the $lang sample of $page: no $tool" >&2
    elif ! "${cmd[@]}"; then
        sample_fail "the $lang sample of $page does not compile"
    else
        checked=$((checked + 1))
    fi
done <"$samples/index"

count() { grep -c "^$1 " "$samples/index" || true; }
cargo_target=${CARGO_TARGET_DIR:-target}
case "$cargo_target" in /*) ;; *) cargo_target=$root/$cargo_target ;; esac

if [ "$(count rust)" -gt 0 ]; then
    t1=$(date +%s)
    {
        printf '[package]\nname = "cosid-docs-samples"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
        printf '[dependencies]\ncosid = { path = "%s/core" }\n\n[workspace]\n' "$root"
    } >"$samples/rust/Cargo.toml"
    cp Cargo.lock "$samples/rust/"
    if (cd "$samples/rust" && CARGO_TARGET_DIR="$cargo_target" cargo build --quiet --offline --examples 2>"$samples/rust.log" ||
        CARGO_TARGET_DIR="$cargo_target" cargo build --quiet --examples 2>"$samples/rust.log"); then
        checked=$((checked + $(count rust)))
    else
        sed 's/^/    /' "$samples/rust.log" >&2
        sample_fail "a Rust sample does not compile (the errors above name target/docs-samples/rust/examples/sampleN.rs, whose first line is its page)"
    fi
    echo "docs: the Rust samples took $(($(date +%s) - t1)) s" >&2
fi

if [ "$(count java)" -gt 0 ]; then
    if ! (source bindings/java/jdk.sh && find_jdk 2>/dev/null); then
        echo "docs: skipping the Java samples: no JDK 22 or newer (bindings/java/jdk.sh)" >&2
    else
        t1=$(date +%s)
        mapfile -t java_files < <(sed -n "s|^java \([^ ]*\) .*|$samples/\1|p" "$samples/index")
        if (source bindings/java/jdk.sh && find_jdk && javac -nowarn -d "$samples/java-classes" \
            -sourcepath bindings/java/src/main/java "${java_files[@]}") 2>"$samples/java.log"; then
            checked=$((checked + $(count java)))
        else
            sed 's/^/    /' "$samples/java.log" >&2
            sample_fail "a Java sample does not compile (the errors above name target/docs-samples/java/SampleN.java, whose first line is its page)"
        fi
        echo "docs: the Java samples took $(($(date +%s) - t1)) s" >&2
    fi
fi

if [ "$(count go)" -gt 0 ]; then
    if ! command -v go >/dev/null || ! command -v pkg-config >/dev/null; then
        echo "docs: skipping the Go samples: no go or no pkg-config" >&2
    else
        t1=$(date +%s)
        # go vet needs cosid.pc for cgo's flags and the header, not the library: one naming the committed header.
        mkdir -p "$samples/pc"
        printf 'Name: cosid\nDescription: cosid (docs samples)\nVersion: 0\nCflags: -I%s/include\nLibs: -lcosid\n' "$root" \
            >"$samples/pc/cosid.pc"
        module=$(sed -n 's/^module //p' bindings/go/go.mod)
        printf 'module cosid-docs-samples\n\ngo 1.24\n\nrequire %s v0.0.0\n\nreplace %s => %s/bindings/go\n' \
            "$module" "$module" "$root" >"$samples/go/go.mod"
        if (cd "$samples/go" && env PKG_CONFIG_PATH="$samples/pc" GOFLAGS=-mod=mod GOMODCACHE="$cargo_target/go-cache/mod" \
            GOCACHE="$cargo_target/go-cache/build" CGO_ENABLED=1 go vet ./... 2>"$samples/go.log"); then
            checked=$((checked + $(count go)))
        else
            sed 's/^/    /' "$samples/go.log" >&2
            sample_fail "a Go sample does not compile (the errors above name target/docs-samples/go/sampleN/main.go, whose first line is its page)"
        fi
        echo "docs: the Go samples took $(($(date +%s) - t1)) s" >&2
    fi
fi
[ "$sample_failed" = 0 ] || exit 1
echo "docs: $checked of $(wc -l <"$samples/index") code samples of docs/ checked (\`ignore\`-marked ones are not extracted)" >&2

cli="${COSID_DOCS_CLI:-}"
if [ -z "$cli" ]; then
    for candidate in target/release/cosid target/debug/cosid; do
        if [ -x "$candidate" ]; then
            cli="$root/$candidate"
            break
        fi
    done
fi
if [ -z "$cli" ]; then
    echo "docs: skipping the start page's command lines: no target/release/cosid or target/debug/cosid (build the CLI, or set COSID_DOCS_CLI)" >&2
else
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/bin" "$tmp/state"
    ln -s "$cli" "$tmp/bin/cosid"
    mapfile -t lines < <(awk '/^```sh$/ { inblock = 1; next } /^```/ { inblock = 0 } inblock && /^cosid / && !/^cosid serve/' docs/start.md)
    [ "${#lines[@]}" -gt 0 ] || { echo "docs: no cosid lines found in docs/start.md's sh blocks" >&2; exit 1; }
    failed=0
    for line in "${lines[@]}"; do
        echo "docs: \$ $line" >&2
        if ! env PATH="$tmp/bin:$PATH" XDG_STATE_HOME="$tmp/state" HOME="$tmp" \
            COSID_STORE="sqlite://$tmp/state/leases.db" bash -c "$line" >"$tmp/out" 2>&1; then
            echo "docs: FAILED: docs/start.md: $line" >&2
            sed 's/^/    /' "$tmp/out" >&2
            failed=1
        fi
    done
    # The HTTP section: its lines that talk to 127.0.0.1:7468, against a `cosid serve` on a free port instead.
    mapfile -t http_lines < <(awk '/^```sh$/ { inblock = 1; next } /^```/ { inblock = 0 } inblock && /127\.0\.0\.1:7468/ && !/^cosid serve/' docs/start.md)
    if ! command -v curl >/dev/null; then
        echo "docs: skipping the start page's HTTP lines: no curl" >&2
        http_lines=()
    elif [ "${#http_lines[@]}" -gt 0 ]; then
        env XDG_STATE_HOME="$tmp/state" HOME="$tmp" COSID_STORE="sqlite://$tmp/state/leases.db" \
            "$cli" serve --listen 127.0.0.1:0 >"$tmp/serve.out" 2>"$tmp/serve.err" &
        serve_pid=$!
        trap 'kill "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
        addr=""
        for _ in $(seq 100); do
            addr="$(sed -n '1s|^cosid serve: listening on http://\([^ ]*\) .*|\1|p' "$tmp/serve.out")"
            [ -n "$addr" ] && break
            kill -0 "$serve_pid" 2>/dev/null || break
            sleep 0.1
        done
        if [ -z "$addr" ]; then
            echo "docs: cosid serve did not start:" >&2
            sed 's/^/    /' "$tmp/serve.err" >&2
            exit 1
        fi
        for line in "${http_lines[@]}"; do
            line="${line//127.0.0.1:7468/$addr}"
            echo "docs: \$ $line" >&2
            if ! env PATH="$tmp/bin:$PATH" XDG_STATE_HOME="$tmp/state" HOME="$tmp" bash -o pipefail -c "set -e; $line" \
                >"$tmp/out" 2>&1 || ! grep -q '[0-9]\{15,\}' "$tmp/out"; then
                echo "docs: FAILED (or printed no id): docs/start.md: $line" >&2
                sed 's/^/    /' "$tmp/out" >&2
                failed=1
            fi
        done
    fi
    [ "$failed" = 0 ] || exit 1
    echo "docs: $((${#lines[@]} + ${#http_lines[@]})) command lines of docs/start.md ran with $cli" >&2
fi
echo "docs: .ci/docs.sh took $(($(date +%s) - t0)) s" >&2
