#!/usr/bin/env bash
# Builds the documentation site (scripts/docs.sh: mdBook from docs/ into target/book) and checks it:
#
# 1. every internal link and anchor of the built site (scripts/check-book-links.py: no network; a link to a
#    missing page or a missing #anchor fails, named);
# 2. the lists of stores, settings and error codes of docs/reference.md (README.md's tables), docs/faq.md, the
#    language pages and docs/stores.md, against the code's own tables (scripts/check-docs-tables.py);
# 3. the command lines of the start page (docs/start.md): every line of its ```sh blocks that starts with `cosid `
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

# The start page's C, Python and JavaScript samples, checked for syntax with the tool of each (the C sample against
# the committed include/cosid.h); a tool that is missing is skipped and said. (The Rust, Java and Go samples are
# fragments of the API the bindings' own tests and examples run.)
samples="$(mktemp -d)"
python3 - "$samples" <<'PY'
import re, sys
text = open("docs/start.md", encoding="utf-8").read()
for i, (lang, body) in enumerate(re.findall(r"^```(c|python|js)\n(.*?)^```", text, re.S | re.M)):
    ext = {"c": "c", "python": "py", "js": "mjs"}[lang]
    open(f"{sys.argv[1]}/sample{i}.{ext}", "w", encoding="utf-8").write(body)
PY
for f in "$samples"/*; do
    case "$f" in
    *.c) tool=cc; cmd=(cc -fsyntax-only -Wall -Wextra -Werror -Iinclude "$f") ;;
    *.py) tool=python3; cmd=(python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$f") ;;
    *.mjs) tool=node; cmd=(node --check "$f") ;;
    esac
    if ! command -v "$tool" >/dev/null; then
        echo "docs: skipping a ${f##*.} sample of docs/start.md: no $tool" >&2
    elif ! "${cmd[@]}"; then
        echo "docs: FAILED: a ${f##*.} sample of docs/start.md does not compile:" >&2
        sed 's/^/    /' "$f" >&2
        exit 1
    fi
done
echo "docs: $(ls "$samples" | wc -l) samples of docs/start.md checked" >&2
rm -rf "$samples"

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
