"""The code migration: `legacy_client.fetch(` replaced by `http_client.get(` in every file.

The usages are found with the paged `search` tool (page numbers, offsets or opaque cursors),
then edited file by file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pos_trapbench.toolagent.traps import paired_or_cycled
from pos_trapbench.toolagent.workspace import (
    SEARCH_PAGE,
    Call,
    Result,
    SafePoint,
    Task,
    Workspace,
    fact,
    search_cursor,
)

MODULES = (
    "handlers/orders",
    "handlers/users",
    "handlers/invoices",
    "handlers/refunds",
    "jobs/sync_stock",
    "jobs/nightly_report",
    "jobs/expire_carts",
    "clients/payments",
    "clients/shipping",
    "clients/tax",
    "services/catalog",
    "services/pricing",
    "services/search",
    "migrations/0007_backfill_skus",
    "migrations/0012_split_addresses",
    "admin/exports",
    "admin/audit",
    "webhooks/stripe",
    "webhooks/carrier",
    "utils/geo",
)


@dataclass
class Migration(Task):
    ws: Workspace
    old: str = "legacy_client.fetch("
    new: str = "http_client.get("
    guide: str = "docs/MIGRATION.md"
    paths: list[str] = field(default_factory=list)
    seen_pages: set[int] = field(default_factory=set)
    guide_read: bool = False
    verified: bool = False
    style: str = "page"
    name = "migration"

    def __post_init__(self) -> None:
        rng = self.ws.rng
        self.style = rng.choice(["page", "offset", "cursor"])
        chosen = rng.sample(MODULES, rng.randint(8, 13))
        self.paths = sorted(f"src/app/{m}.py" for m in chosen)
        for path in self.paths:
            lines = ["from app.net import legacy_client", ""]
            for use in range(rng.choice([1, 1, 2])):
                lines += [
                    f"def call_{use}(item_id: str) -> dict:",
                    f'    resp = legacy_client.fetch(f"{{BASE}}/{path.rsplit("/", 1)[1][:-3]}/{{item_id}}", '
                    f"timeout={rng.choice([2, 5, 10])})",
                    "    return resp.json()",
                    "",
                ]
            self.ws.write(path, lines)
        while self._matches() < 11:
            path = rng.choice(self.paths)
            self.ws.files[path] += [
                "def extra(item_id: str) -> dict:",
                "    return legacy_client.fetch(item_id).json()",
                "",
            ]
        self.ws.write(
            self.guide,
            [
                "# Migrating to http_client",
                "",
                "Calls to legacy_client.fetch become http_client.get.",
            ],
        )
        self.ws.write(
            "src/app/net/http_client.py",
            ["def get(url: str, timeout: float = 5) -> Response:", "    ..."],
        )
        self.goal_text = f"replace every `{self.old}` with `{self.new}`"
        self._initial_pages = self._pages()

    def _matches(self) -> int:
        return sum(self.old in line for p in self.paths for line in self.ws.files[p])

    def _pages(self) -> int:
        total = sum(self.old in line for p in self.ws.files for line in self.ws.files[p])
        return -(-total // SEARCH_PAGE)

    def pending(self) -> list[str]:
        return [p for p in self.paths if any(self.old in line for line in self.ws.files[p])]

    def facts(self) -> set[str]:
        pending = set(self.pending())
        facts = {fact("uses", p, "legacy_client") for p in pending}
        facts |= {fact("migrated", p) for p in self.paths if p not in pending}
        return facts

    def goals(self) -> set[str]:
        return {fact("migrated", p) for p in self.paths}

    def questions(self) -> set[str]:
        unseen = self._initial_pages - len(self.seen_pages)
        return {fact("where", "legacy_client.fetch")} if unseen > 0 else set()

    def remaining(self) -> int:
        unseen = max(0, self._initial_pages - len(self.seen_pages))
        return (not self.guide_read) + unseen + len(self.pending()) + (not self.verified)

    _initial_pages = 0

    def entities(self) -> set[str]:
        return {self.old.rstrip("("), *self.paths}

    def read(self, path: str, start: int | None, end: int | None) -> Result | None:
        if path == self.guide:
            self.guide_read = True
        return None

    def searched(self, query: str, offset: int, total: int) -> None:
        if query != self.old:
            return
        if total == 0:
            self.verified = not self.pending()
        elif offset // SEARCH_PAGE < self._initial_pages:
            self.seen_pages.add(offset // SEARCH_PAGE)

    def _page_args(self, number: int) -> dict[str, Any]:
        if number == 0 or self.style == "page":
            return {"query": self.old, "page": number + 1} if number else {"query": self.old}
        if self.style == "offset":
            return {"query": self.old, "offset": number * SEARCH_PAGE, "limit": SEARCH_PAGE}
        return {"query": self.old, "cursor": search_cursor(self.old, number * SEARCH_PAGE)}

    def flow(self) -> Iterator[Call | SafePoint]:
        yield Call("read_file", {"path": self.guide})
        yield Call("list_dir", {"path": "src/app"})
        for number in range(self._initial_pages):
            yield Call("search", self._page_args(number), "paging")
        yield SafePoint("S1")
        yield Call("read_file", {"path": "src/app/net/http_client.py"})
        yield Call("read_file", {"path": self.paths[0]})
        paired = self.ws.rng.random() < 0.4
        for path in self.paths:
            if paired:
                yield Call("read_file", {"path": path}, "iterate")
            yield Call(
                "edit_file",
                {"path": path, "old": self.old, "new": self.new, "replace_all": True},
                "iterate",
            )
        yield Call("search", {"query": self.old})
        yield SafePoint("S2")

    def trap(self, kind: str, point: str) -> list[Call] | None:
        rng = self.ws.rng
        first = Call("search", self._page_args(0))
        other = (
            Call("search", self._page_args(1))
            if point == "S1"
            else Call("read_file", {"path": rng.choice(self.paths)})
        )
        if kind == "repeat":
            if point == "S2" and rng.random() < 0.4:  # an edit already made, retried
                path = rng.choice(self.paths)
                first = Call(
                    "edit_file",
                    {"path": path, "old": self.old, "new": self.new, "replace_all": True},
                )
            return [first] * rng.randint(6, 12)
        pool = [
            first,
            Call("read_file", {"path": self.guide}),
            Call("read_file", {"path": "src/app/net/http_client.py"}),
            Call("list_dir", {"path": "src/app"}),
            other,
        ]
        return paired_or_cycled(kind, rng, (first, other), pool)
