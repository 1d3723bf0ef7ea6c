"""Internal links of a built documentation site: every relative `href` and `src` of every HTML
page must name a file of the site, and every `#fragment` an element of the page it points at.

`mkdocs build --strict` already refuses a Markdown link to a missing page or anchor; this check
reads what was really built, so it also covers images, links written as HTML, links in the API
reference and links the theme adds. Run it on a built site: `python tests/docs_links.py site`
(`make docs` does).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Attributes that name another resource, per tag.
_LINK_ATTRIBUTES = {"a": "href", "link": "href", "img": "src", "script": "src", "source": "src"}


@dataclass
class _Page:
    ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = _Page()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if values.get(name):
                self.page.ids.add(str(values[name]))
        attribute = _LINK_ATTRIBUTES.get(tag)
        target = values.get(attribute) if attribute else None
        if target is not None:
            self.page.links.append(target)


def _parse(path: Path) -> _Page:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser.page


def _is_external(link: str) -> bool:
    parts = urlsplit(link)
    return bool(parts.scheme) or link.startswith("//")


def broken_links(site: Path) -> list[str]:
    """Every internal link of the HTML pages under `site` that does not resolve, as
    `page: link (why)`; empty when all resolve. External links (with a scheme) are not
    followed; an absolute path (`/x`) is looked up from the site's root."""
    site = site.resolve()
    pages: dict[Path, _Page] = {p.resolve(): _parse(p) for p in sorted(site.rglob("*.html"))}
    problems: list[str] = []
    for path, page in pages.items():
        where = path.relative_to(site).as_posix()
        for link in page.links:
            if not link or _is_external(link):
                continue
            parts = urlsplit(link)
            # An absolute path (the theme's 404 page uses them) is served from the site's root.
            base = site if parts.path.startswith("/") else path.parent
            target = (base / unquote(parts.path).lstrip("/")).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{where}: {link} (no such file)")
                continue
            fragment = unquote(parts.fragment)
            if not fragment or target.suffix != ".html":
                continue
            ids = pages[target].ids if target in pages else _parse(target).ids
            if fragment not in ids:
                problems.append(f"{where}: {link} (no element with id {fragment!r})")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/docs_links.py SITE_DIR", file=sys.stderr)
        return 2
    site = Path(argv[0])
    if not site.is_dir():
        print(f"docs_links: {site} is not a folder (build the site first: make docs)")
        return 2
    problems = broken_links(site)
    for problem in problems:
        print(f"broken link: {problem}")
    pages = sum(1 for _ in site.rglob("*.html"))
    print(f"docs_links: {pages} pages, {len(problems)} broken internal links")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
