#!/usr/bin/env python3
"""Extracts the code samples of docs/*.md into a folder, as files the tool of each language checks
(.ci/docs.sh runs them). The conventions are the ones .ci/docs.sh's header states:

- ```c, ```python, ```js: one file each (sampleN.c, .py, .mjs), as written; a C sample with no `main` is a
  fragment (sampleN.fragment.c): its #include lines on top, after stdint.h, stdio.h and cosid.h, and the rest the
  body of `main`, or the file's top level if it defines a function;
- ```rust: one example of a throwaway crate each (rust/examples/sampleN.rs); a sample with no `fn main` is the
  body of `fn main() -> Result<(), Box<dyn std::error::Error>>`;
- ```java: a sample that declares a class is compiled as written; else its `import` lines stay on top and the rest
  is the body of a method `static void sample() throws Exception`, in a class of its own (java/SampleN.java);
- ```go: a sample with `package` is compiled as written; else its `import` lines stay on top and the rest is the
  body of `func sampleN() error` (or, if it declares `func main`, the file's top level), in package main of one
  module (go/sampleN.go);
- an info string with `ignore` (```rust,ignore, ```java,ignore, ```go,ignore) skips the sample: for fragments
  that cannot stand alone.

    python3 scripts/docs-samples.py OUT_DIR      # prints one line per sample: LANG FILE PAGE:LINE
"""
import glob
import os
import re
import sys

out = sys.argv[1]
os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
for sub in ("rust/examples", "java", "go", "other"):
    os.makedirs(os.path.join(out, sub), exist_ok=True)

n = 0
index = []


def write(path, text):
    with open(os.path.join(out, path), "w", encoding="utf-8") as f:
        f.write(text)


def split_imports(body):
    imports, rest = [], []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not rest and (line.startswith("import ") or not line.strip()):
            if line.strip() == "import (":
                while not lines[i].startswith(")"):
                    imports.append(lines[i])
                    i += 1
                imports.append(lines[i])
            else:
                imports.append(line)
        else:
            rest.append(line)
        i += 1
    return "\n".join(imports), "\n".join(rest)


for page in sorted(glob.glob("docs/*.md")):
    text = open(page, encoding="utf-8").read()
    for m in re.finditer(r"^```([a-z]+)([^\n]*)\n(.*?)^```", text, re.S | re.M):
        lang, info, body = m.group(1), m.group(2), m.group(3)
        if lang not in ("c", "python", "js", "rust", "java", "go") or "ignore" in info:
            continue
        n += 1
        where = f"{page}:{text[: m.start()].count(chr(10)) + 1}"
        if lang == "c" and not re.search(r"\bmain\s*\(", body):
            # A fragment: its #include lines on top, after the headers any sample may use; the rest is main's body,
            # unless it defines a function, when it is the file's top level. Unused names are allowed (a fragment
            # shows a call, not what is done with its result).
            includes = "".join(line + "\n" for line in body.splitlines() if line.startswith("#include"))
            rest = "".join(line + "\n" for line in body.splitlines() if not line.startswith("#include"))
            head = "#include <stdint.h>\n#include <stdio.h>\n#include <cosid.h>\n" + includes
            if not re.search(r"^[A-Za-z_][\w \t*]*\([^;{]*\)\s*\{", rest, re.M):
                rest = "int main(void) {\n" + rest + "    return 0;\n}\n"
            f = f"other/sample{n}.fragment.c"
            write(f, f"/* {where} */\n" + head + rest)
        elif lang in ("c", "python", "js"):
            f = f"other/sample{n}." + {"c": "c", "python": "py", "js": "mjs"}[lang]
            write(f, body)
        elif lang == "rust":
            if not re.search(r"^\s*(pub )?(async )?fn main\b", body, re.M):
                body = "fn main() -> Result<(), Box<dyn std::error::Error>> {\n" + body + "    Ok(())\n}\n"
            f = f"rust/examples/sample{n}.rs"
            write(f, f"// {where}\n" + body)
        elif lang == "java":
            cls = f"Sample{n}"
            if re.search(r"^\s*(public )?(final )?class \w+", body, re.M):
                name = re.search(r"^\s*(?:public )?(?:final )?class (\w+)", body, re.M).group(1)
                os.makedirs(os.path.join(out, "java", cls), exist_ok=True)
                f = f"java/{cls}/{name}.java"
                write(f, body)
            else:
                imports, rest = split_imports(body)
                f = f"java/{cls}.java"
                write(f, f"// {where}\n{imports}\nclass {cls} {{\n    static void sample() throws Exception {{\n{rest}\n    }}\n}}\n")
        elif lang == "go":
            if re.search(r"^package ", body, re.M):
                os.makedirs(os.path.join(out, "go", f"sample{n}"), exist_ok=True)
                f = f"go/sample{n}/main.go"
                write(f, body)
            else:
                imports, rest = split_imports(body)
                os.makedirs(os.path.join(out, "go", f"sample{n}"), exist_ok=True)
                f = f"go/sample{n}/main.go"
                if re.search(r"^func main\(\)", rest, re.M):
                    write(f, f"// {where}\n\npackage main\n\n{imports}\n\n{rest}\n")
                else:
                    write(f, f"// {where}\n\npackage main\n\n{imports}\n\nfunc sample() error {{\n{rest}\n\treturn nil\n}}\n\nfunc main() {{ _ = sample() }}\n")
        index.append(f"{lang} {f} {where}")

print("\n".join(index))
