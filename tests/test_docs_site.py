"""The documentation site builds with warnings as errors, and every internal link of the built
pages resolves (pages, anchors, images); both checks fail on a broken link."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from docs_links import broken_links
from extras import installed

ROOT = Path(__file__).resolve().parents[1]

needs_mkdocs = pytest.mark.skipif(
    not (installed("mkdocs") and installed("material") and installed("mkdocstrings_handlers")),
    reason="needs the `docs` dependency group (mkdocs not installed): uv sync --group docs",
)


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # NO_MKDOCS_2_WARNING: the theme's banner about MkDocs 2.0, printed on every build.
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


# -- the link check on hand-written pages --------------------------------------------------------


def _page(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<!doctype html><html><body>{body}</body></html>", encoding="utf-8")


def test_the_link_check_passes_a_site_whose_links_all_resolve(tmp_path: Path) -> None:
    _page(
        tmp_path / "index.html",
        '<h2 id="top">Top</h2><a href="guide/page.html#setup">guide</a><a href="#top">up</a>'
        '<img src="img/view.png"><a href="guide/">folder</a><a href="https://example.org/x">'
        'out</a><a href="mailto:someone@example.org">mail</a>',
    )
    _page(tmp_path / "guide" / "page.html", '<h2 id="setup">Set up</h2><a href="../index.html">')
    _page(tmp_path / "guide" / "index.html", "<p>guide</p>")
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "view.png").write_bytes(b"\x89PNG")
    assert broken_links(tmp_path) == []


def test_the_link_check_names_each_broken_link(tmp_path: Path) -> None:
    _page(
        tmp_path / "index.html",
        '<h2 id="top">Top</h2>'
        '<a href="missing.html">a missing page</a>'
        '<a href="guide.html#nowhere">a missing anchor</a>'
        '<a href="#gone">a missing anchor on this page</a>'
        '<img src="img/absent.png">'
        '<a href="/guide.html">an absolute path</a>'
        '<a href="/nowhere.html">an absolute path to nothing</a>',
    )
    _page(tmp_path / "guide.html", '<h2 id="setup">Set up</h2>')
    assert broken_links(tmp_path) == [
        "index.html: missing.html (no such file)",
        "index.html: guide.html#nowhere (no element with id 'nowhere')",
        "index.html: #gone (no element with id 'gone')",
        "index.html: img/absent.png (no such file)",
        "index.html: /nowhere.html (no such file)",
    ]


# -- mkdocs itself: a tiny fixture site, then the real one ---------------------------------------


def _fixture_site(root: Path, home: str) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text(home, encoding="utf-8")
    (root / "docs" / "other.md").write_text("# Other\n\n## Setup\n\nText.\n", encoding="utf-8")
    config = root / "mkdocs.yml"
    config.write_text(
        "site_name: fixture\n"
        "use_directory_urls: false\n"
        "validation:\n  anchors: warn\n  not_found: warn\n  unrecognized_links: warn\n"
        "nav:\n  - index.md\n  - other.md\n",
        encoding="utf-8",
    )
    return config


@needs_mkdocs
def test_a_strict_build_fails_on_a_broken_page_link_and_passes_without_it(tmp_path: Path) -> None:
    good = _fixture_site(tmp_path / "good", "# Home\n\nSee [setup](other.md#setup).\n")
    built = _build(good, tmp_path / "good-site")
    assert built.returncode == 0, built.stderr
    assert broken_links(tmp_path / "good-site") == []

    bad = _fixture_site(
        tmp_path / "bad", "# Home\n\nSee [setup](missing.md) and [x](other.md#no).\n"
    )
    built = _build(bad, tmp_path / "bad-site")
    assert built.returncode != 0
    assert "missing.md" in built.stderr and "#no" in built.stderr


@needs_mkdocs
def test_the_documentation_site_builds_strict_and_every_internal_link_resolves(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    built = _build(ROOT / "mkdocs.yml", site)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    assert (site / "index.html").is_file()
    assert (site / "reference" / "monitor.html").read_text(encoding="utf-8").count("TrapMonitor")
    assert broken_links(site) == []
