#!/usr/bin/env python3
"""Checks every internal link and anchor of the built documentation site, without the network.

    python3 scripts/check-book-links.py target/book

Every `href` or `src` to a local file must exist, and every `#anchor` must be an `id` (or `name`) in its target page.
Links with a scheme (https:, mailto:, ...) are not followed; a link starting with `/` is read from the site's root. Exits 1 naming each broken link as
`page: href (why)`.
"""

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []
        self.base = None

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if tag == "base" and name == "href":
                self.base = value
            elif name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            elif name == "href" or (name == "src" and tag in ("img", "script", "iframe")):
                self.links.append(value)


def parse(path, cache):
    if path not in cache:
        page = Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = page
    return cache[path]


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "target/book").resolve()
    pages = sorted(root.rglob("*.html"))
    if not pages:
        print(f"check-book-links: no pages under {root}: build the site first (scripts/docs.sh)", file=sys.stderr)
        return 1
    cache = {}
    broken = []
    checked = 0
    for page_path in pages:
        page = parse(page_path, cache)
        rel_page = page_path.relative_to(root)
        for href in page.links:
            url = urlsplit(href)
            if url.scheme or href.startswith("//") or href.startswith("javascript:"):
                continue
            checked += 1
            # A root-relative link, or any link of a page with <base href="/..."> (mdBook's 404 page, made to be
            # served at the site's root), resolves from the site's root.
            base = page_path.parent
            if page.base is not None and page.base.startswith("/"):
                base = root / page.base.lstrip("/")
            if url.path.startswith("/"):
                target = (root / unquote(url.path).lstrip("/")).resolve()
            elif url.path:
                target = (base / unquote(url.path)).resolve()
            else:
                target = page_path
            if target.is_dir():
                target = target / "index.html"
            if root not in target.parents and target != root:
                broken.append(f"{rel_page}: {href} (outside the site)")
                continue
            if not target.exists():
                broken.append(f"{rel_page}: {href} (no file {target.relative_to(root)})")
                continue
            fragment = unquote(url.fragment)
            if fragment and target.suffix == ".html" and fragment not in parse(target, cache).ids:
                broken.append(f"{rel_page}: {href} (no anchor #{fragment} in {target.relative_to(root)})")
    for line in broken:
        print(f"broken link: {line}", file=sys.stderr)
    print(f"check-book-links: {len(pages)} pages, {checked} internal links, {len(broken)} broken", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
