#!/usr/bin/env python3
"""Compares the lists of the documentation with the code's own tables (no hard-coded copy of them):

- stores: the URL schemes `StoreUrl::parse` accepts (the arms of its `match scheme` in core/src/store/url.rs; an
  arm whose body is an `Err(...)`, like `mongodb+srv`, is a scheme the code knows and refuses) and the slots without
  a store (`static:`, `manual:`, the `strip_prefix`es of core/src/static_slot.rs);
- settings: the `SETTINGS` table of core/src/host/settings.rs (key, camelCase key, `COSID_*` variable);
- error codes: `ErrorCode::name` and the enum's numbers in core/src/host/code.rs.

What it requires:

- the reference (README.md's `settings` and `stores` sections, which docs/reference.md includes): a row for every
  setting's variable and no other, and every accepted scheme, naming no scheme the code does not know;
- the pages that list stores (docs/{python,node,c-api,java,go,stores}.md, README.md): every store named (by one
  of its schemes), and no `scheme://` in code that the code does not know;
- the pages that list settings (the language pages): every setting named, by its variable or a key, and no
  `COSID_*` name that appears nowhere in the sources;
- the stores the packages carry: the `default` features of the C library, the Python module and the Node addon,
  and the CLI's `release` feature, are one set, and README.md's "in the packages" column says `yes` for exactly
  those stores (with SQLite, memory and `http://`, which every build has);
- error codes: docs/faq.md's table of codes is exactly the code's list, its headings name only codes, and every
  code has its place in it; docs/c-api.md's table of numbers is exactly the code's names and numbers; the language
  pages' error tables name no code the code does not have.

    python3 scripts/check-docs-tables.py      # from the repository's root; exit 1 with the differences
"""
import os
import re
import sys

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
failures = []


def fail(msg):
    failures.append(msg)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# --- The code's tables -------------------------------------------------------------------------------------------

url_rs = read("core/src/store/url.rs")
m = re.search(r"match scheme \{\n(.*?)\n        \}\n", url_rs, re.S)
if not m:
    sys.exit("check-docs-tables: no `match scheme {` in core/src/store/url.rs (update this script)")
stores = []  # [[scheme, alias...]] of the accepted arms, in the code's order
refused = set()
for arm in re.finditer(r'^ {12}((?:"[^"]+"\s*\|\s*)*"[^"]+")(?:\s+if [^=]*)?\s*=>\s*(.*)$', m.group(1), re.M):
    schemes = re.findall(r'"([^"]+)"', arm.group(1))
    if arm.group(2).startswith("Err("):
        refused.update(s for s in schemes if not any(s in st for st in stores))
    elif not any(schemes[0] in st for st in stores):
        stores.append(schemes)
if len(stores) < 5:
    sys.exit(f"check-docs-tables: read only {stores} from core/src/store/url.rs (update this script)")
static_prefixes = re.findall(r'strip_prefix\("([a-z]+):"\)', read("core/src/static_slot.rs"))
if sorted(static_prefixes) != ["manual", "static"]:
    sys.exit(f"check-docs-tables: read {static_prefixes} from core/src/static_slot.rs (update this script)")
stores += [[p] for p in static_prefixes]
schemes = {s for st in stores for s in st}
refused -= schemes

settings_rs = read("core/src/host/settings.rs")
settings = [
    dict(key=k, js=j, env=e)
    for k, j, e in re.findall(
        r'Setting \{\s*key: "([^"]+)",\s*js: "([^"]+)",\s*env: "([^"]+)"', settings_rs.split("pub const SETTINGS")[1]
    )
]
if len(settings) < 5:
    sys.exit("check-docs-tables: read too few SETTINGS from core/src/host/settings.rs (update this script)")
envs = {s["env"] for s in settings}

code_rs = read("core/src/host/code.rs")
enum = re.search(r"pub enum ErrorCode \{(.*?)\n\}", code_rs, re.S).group(1)
numbers = dict(re.findall(r"^\s*([A-Za-z0-9]+) = (\d+),", enum, re.M))
codes = {}  # NAME -> number
for variant, name in re.findall(r'ErrorCode::([A-Za-z0-9]+) => "([A-Z0-9_]+)"', code_rs):
    codes[name] = int(numbers[variant])
if len(codes) != len(numbers) or len(codes) < 10:
    sys.exit("check-docs-tables: ErrorCode's names and numbers do not match up (update this script)")

# Every COSID_* name and every upper-case string literal of the sources and scripts: what a page may name beyond the
# tables (COSID_RESULT_*, event names, states, the test scripts' variables, ...).
source_names = set()
for top in ("core", "cli", "ffi", "include", "bindings", ".ci", "scripts"):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in ("target", "node_modules", "build", ".venv", "__pycache__")]
        for fn in filenames:
            if fn.endswith((".rs", ".h", ".c", ".py", ".pyi", ".js", ".mjs", ".ts", ".java", ".go", ".sh")):
                try:
                    text = read(os.path.join(dirpath, fn))
                except (UnicodeDecodeError, OSError):
                    continue
                source_names.update(re.findall(r"COSID_[A-Z0-9_]+", text))
                source_names.update(re.findall(r'"([A-Z][A-Z0-9_]{2,})"', text))


# --- The pages ---------------------------------------------------------------------------------------------------

def without_fences(text):
    """The text with its ``` blocks blanked (kept: their line count)."""
    return re.sub(r"^```.*?^```", lambda b: "\n" * b.group(0).count("\n"), text, flags=re.S | re.M)


def code_spans(text):
    """Every `code span` of the prose, and every line of the ``` blocks."""
    spans = re.findall(r"`([^`\n]+)`", without_fences(text))
    for block in re.findall(r"^```.*?\n(.*?)^```", text, re.S | re.M):
        spans.extend(block.splitlines())
    return spans


def named_schemes(text):
    """The schemes a page names in code: `scheme://...`, and `memory:`/`static:`/`manual:`-like values."""
    found = set()
    for span in code_spans(text):
        for s in re.findall(r"(?<![A-Za-z0-9+.-])([a-z][a-z0-9+.-]*)://", span):
            found.add(s)
        for s in re.findall(r"(?:^|[\s'\"(=])([a-z]+):(?:[0-9A-Za-z]|$|[?'\"])", span.strip()):
            if s in schemes:
                found.add(s)
    return found


def section(text, anchor):
    m = re.search(rf"<!-- ANCHOR: {anchor}\b.*?-->\n(.*?)<!-- ANCHOR_END: {anchor} -->", text, re.S)
    if not m:
        fail(f"README.md: no `{anchor}` section (docs/reference.md includes it)")
        return ""
    return m.group(1)


def check_no_unknown_schemes(page, text):
    unknown = named_schemes(text) - schemes - refused - {"file"}
    for s in sorted(unknown):
        fail(f"{page}: names the store scheme `{s}:`, which core/src/store/url.rs does not accept")


readme = read("README.md")

# The reference: README.md's settings and stores sections.
settings_md = section(readme, "settings")
rows = re.findall(r"^\| `(COSID_[A-Z0-9_]+)` \|", settings_md, re.M)
for e in sorted(envs - set(rows)):
    fail(f"README.md (settings, shown in docs/reference.md): no row for {e} (core/src/host/settings.rs)")
for e in sorted(set(rows) - envs):
    fail(f"README.md (settings, shown in docs/reference.md): a row for {e}, which is not in core/src/host/settings.rs")
stores_md = section(readme, "stores")
named = named_schemes(stores_md) | named_schemes(settings_md)
for s in sorted(schemes - named):
    fail(f"README.md (stores, shown in docs/reference.md): does not name the scheme `{s}:` of core/src/store/url.rs")

# The pages that list stores.
for page in ("docs/python.md", "docs/node.md", "docs/c-api.md", "docs/java.md", "docs/go.md", "docs/stores.md", "README.md"):
    text = read(page)
    named = named_schemes(text)
    check_no_unknown_schemes(page, text)
    if page == "docs/stores.md":
        wanted = [st for st in stores if st[0] not in static_prefixes]  # a page about stores, not static slots
    else:
        wanted = stores
    for st in wanted:
        if not named & set(st):
            fail(f"{page}: does not name the store `{st[0]}:` of core/src/store/url.rs")

# The pages that list settings.
for page in ("docs/python.md", "docs/node.md", "docs/c-api.md", "docs/java.md", "docs/go.md", "README.md"):
    text = read(page)
    spans = set(code_spans(text))
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(spans)))
    for s in settings:
        if not {s["env"], s["key"], s["js"]} & words:
            fail(f"{page}: does not name the setting {s['env']} ({s['key']}) of core/src/host/settings.rs")
    for name in sorted(set(re.findall(r"\bCOSID_[A-Z0-9_]*[A-Z0-9]\b", text)) - envs - source_names):
        fail(f"{page}: names {name}, which no source file has")

# Error codes.
faq = read("docs/faq.md")
table = set()
for row in re.findall(r"^\| \dxxx \|.*$", faq, re.M):
    table.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[-2]))
for c in sorted(set(codes) - table):
    fail(f"docs/faq.md: the table of codes does not list {c} (core/src/host/code.rs)")
for c in sorted(table - set(codes)):
    fail(f"docs/faq.md: the table of codes lists {c}, which core/src/host/code.rs does not have")
for heading in re.findall(r"^#+ (.*)$", faq, re.M):
    for c in re.findall(r"`([A-Z][A-Z0-9_]+)`", heading.split(":")[0]):
        if c not in codes:
            fail(f"docs/faq.md: the heading `{heading}` names {c}, which core/src/host/code.rs does not have")
for c in sorted(codes):
    if f"`{c}`" not in faq:
        fail(f"docs/faq.md: the error code {c} of core/src/host/code.rs has no place in the FAQ")

capi = read("docs/c-api.md")
pairs = {}
for row in re.findall(r"^\| \d000s \|.*$", capi, re.M):
    pairs.update((n, int(v)) for n, v in re.findall(r"`([A-Z][A-Z0-9_]+)` (\d+)", row))
for c, n in sorted(codes.items()):
    if c not in pairs:
        fail(f"docs/c-api.md: the table of result numbers does not list {c} {n}")
    elif pairs[c] != n:
        fail(f"docs/c-api.md: the table of result numbers gives {c} {pairs[c]}, core/src/host/code.rs {n}")
for c in sorted(set(pairs) - set(codes)):
    fail(f"docs/c-api.md: the table of result numbers lists {c}, which core/src/host/code.rs does not have")
for name in sorted(set(re.findall(r"\bCOSID_RESULT_([A-Z0-9_]*[A-Z0-9])\b", capi)) - set(codes) - {"OK"}):
    fail(f"docs/c-api.md: names COSID_RESULT_{name}, which core/src/host/code.rs does not have")

for page in ("docs/python.md", "docs/node.md", "docs/java.md", "docs/go.md", "docs/serve.md", "docs/faq.md"):
    for row in re.findall(r"^\|.*\|$", read(page), re.M):
        for name in re.findall(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)`", row):
            if len(name) > 2 and name not in codes and name not in source_names and name not in envs:
                fail(f"{page}: a table names `{name}`, which is no error code (core/src/host/code.rs) nor a name of the sources")

# The stores the packages carry.
def features(path, name):
    m = re.search(r"^" + name + r" = \[([^\]]*)\]", read(path), re.M)
    if not m:
        fail(f"{path}: no `{name}` feature")
        return set()
    return set(re.findall(r'"([a-z]+)"', m.group(1)))


shipped = features("ffi/Cargo.toml", "default")
for path, name in (("bindings/python/Cargo.toml", "default"), ("bindings/node/Cargo.toml", "default"),
                   ("cli/Cargo.toml", "release")):
    if features(path, name) != shipped:
        fail(f"{path}: `{name}` carries {sorted(features(path, name))}, not ffi/Cargo.toml's {sorted(shipped)}")
yes, rows = set(), 0
for row in re.findall(r"^\|.*\|$", stores_md, re.M):
    cells = [c.strip() for c in row.strip("|").split("|")]
    feature = re.search(r"`([a-z]+)`", cells[2]) if len(cells) > 3 else None
    if feature is None and (len(cells) < 4 or cells[2] != "always"):
        continue
    rows += 1
    if cells[3] == "yes":
        yes.add(feature.group(1) if feature else "memory")
want = shipped | {"sqlite", "http", "memory"}
if rows < len(stores) - 3 or yes != want:
    fail(f"README.md (stores): the packages column says yes for {sorted(yes)}, the builds carry {sorted(want)}")

if failures:
    print("docs: the documentation's lists differ from the code's tables:", file=sys.stderr)
    for f in failures:
        print(f"    {f}", file=sys.stderr)
    sys.exit(1)
print(
    f"docs: {len(stores)} stores ({len(schemes)} schemes), {len(settings)} settings and {len(codes)} error codes "
    f"of the code match the docs' lists",
    file=sys.stderr,
)
