"""A simulated workspace: files, and the tasks that own a test runner, a service, a job queue.

The workspace executes tool calls (name + arguments) and answers with the text a real tool
would print, noise included. Its true state is plain Python data; each task turns its part into
fact strings (`failing(test_login)`, `setting(api.conf, proxy_read_timeout, 30s)`), into the
goal facts and open questions, and into `remaining()`: how many agent steps the task still
needs, as judged from the true state. A step is progress when `remaining()` went down.

The agent's belief is what the workspace shows it: a fact enters the belief once its subject
(the first argument) has appeared in an output. Tools shared by every task (reading, editing,
listing and searching files) live here; the tasks answer their own tools and react to edits.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pos_trapbench.toolagent.noise import Noise

SEARCH_PAGE = 5
"""Matches per page of the search tool."""


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call the scripted agent makes, with the label of its step."""

    tool: str
    args: dict[str, Any]
    label: str = "none"

    def arguments(self, shuffled: bool = False) -> str:
        """The arguments as the model sends them: JSON text, keys in its own order."""
        items = list(self.args.items())
        if shuffled:
            items.reverse()
        return json.dumps(dict(items))


@dataclass(frozen=True, slots=True)
class SafePoint:
    """A point of a task's flow where a trap may be injected (no job or boot in progress)."""

    name: str


@dataclass(frozen=True, slots=True)
class Result:
    text: str
    error: bool = False
    """The call itself failed (a missing file, an edit that matched nothing, a refused
    connection); a failing test or an HTTP 502 is a result, not an error."""


def fact(predicate: str, *arguments: object) -> str:
    return f"{predicate}({', '.join(str(a) for a in arguments)})"


class Task:
    """One part of the work: its state, its tools, its facts and the agent's plan for it."""

    name: str
    goal_text: str

    def facts(self) -> set[str]:
        """True facts of this task's part of the workspace."""
        raise NotImplementedError

    def goals(self) -> set[str]:
        """Facts that hold when this task is done."""
        raise NotImplementedError

    def questions(self) -> set[str]:
        """What the agent still has to find out (epistemic gaps)."""
        return set()

    def remaining(self) -> int:
        """Agent steps this task still needs, from the true state."""
        raise NotImplementedError

    def entities(self) -> set[str]:
        """What this task is about (the belief's focus while it is the current task)."""
        raise NotImplementedError

    def tick(self) -> None:
        """Time passes (one step): jobs run, services boot."""

    def handle(self, call: Call) -> Result | None:
        """Answer a call to one of this task's tools; None when the tool is not its own."""
        return None

    def read(self, path: str, start: int | None, end: int | None) -> Result | None:
        """Answer a read of a file this task writes itself (a log); None for plain files."""
        return None

    def edited(self, path: str, old: str, new: str) -> None:
        """A file was edited: the task updates its state."""

    def searched(self, query: str, offset: int, total: int) -> None:
        """The agent read one page of search results (`total` matches in all)."""

    def listing(self, prefix: str) -> dict[str, int]:
        """Entries this task adds to a folder listing (name -> size)."""
        return {}

    def flow(self) -> Iterator[Call | SafePoint]:
        """The agent's productive calls for this task, with safe points for traps."""
        raise NotImplementedError

    def trap(self, kind: str, point: str) -> list[Call] | None:
        """The calls of a trap segment of `kind` at safe point `point`; None: not possible."""
        return None

    def arm_polling(self, point: str, polls: int) -> bool:
        """Make the next wait of the flow never finish, for `polls` polls; False: not here."""
        return False


class PollingTask(Task):
    """A task with a wait after safe point S1 that a polling trap can make hang: `arm_polling`
    sets `hang_armed` (the next wait hangs) and `hang_length` (for how many polls)."""

    hang_armed = False
    hang_length = 0

    def arm_polling(self, point: str, polls: int) -> bool:
        if point != "S1":
            return False
        self.hang_armed = True
        self.hang_length = polls
        return True


@dataclass
class Workspace:
    noise: Noise
    root: str
    files: dict[str, list[str]] = field(default_factory=dict)
    revisions: dict[str, int] = field(default_factory=dict)
    tasks: list[Task] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    """Subjects that appeared in an output (the belief holds their facts)."""

    @property
    def rng(self) -> random.Random:
        return self.noise.rng

    def write(self, path: str, lines: list[str]) -> None:
        self.files[path] = list(lines)
        self.revisions.setdefault(path, 1)

    def see(self, *subjects: str) -> None:
        self.seen.update(subjects)

    # -- state -------------------------------------------------------------------------------------

    def true_facts(self) -> set[str]:
        facts = {fact("revision", path, f"r{n}") for path, n in self.revisions.items()}
        for task in self.tasks:
            facts |= task.facts()
        return facts

    def belief_facts(self) -> set[str]:
        """The true facts whose subject the agent has seen."""
        return {f for f in self.true_facts() if _subject(f) in self.seen}

    def goals(self) -> set[str]:
        return set().union(*(t.goals() for t in self.tasks))

    def questions(self) -> set[str]:
        return set().union(*(t.questions() for t in self.tasks))

    def remaining(self) -> int:
        return sum(t.remaining() for t in self.tasks)

    # -- tools -------------------------------------------------------------------------------------

    def execute(self, call: Call) -> Result:
        """Run one call; time moves first (a job advances while the agent thinks)."""
        self.noise.advance()
        for task in self.tasks:
            task.tick()
        generic = {
            "read_file": self._read_file,
            "edit_file": self._edit_file,
            "list_dir": self._list_dir,
            "search": self._search,
        }
        try:
            if call.tool in generic:
                return generic[call.tool](call.args)
            for task in self.tasks:
                result = task.handle(call)
                if result is not None:
                    return result
        except (KeyError, TypeError, ValueError) as exc:
            return Result(f"error: invalid arguments for {call.tool}: {exc}", error=True)
        return Result(f"error: unknown tool {call.tool!r}", error=True)

    def _read_file(self, args: dict[str, Any]) -> Result:
        path = str(args["path"])
        start, end = args.get("start"), args.get("end")
        for task in self.tasks:
            result = task.read(path, start, end)
            if result is not None:
                self.see(path)
                return result
        lines = self.files.get(path)
        if lines is None:
            return Result(f"error: {path}: No such file or directory", error=True)
        self.see(path)
        first = max(1, int(start or 1))
        last = min(len(lines), int(end or len(lines)))
        body = "\n".join(f"{n:>5}\t{lines[n - 1]}" for n in range(first, last + 1))
        footer = (
            f"[{path} · lines {first}-{last} of {len(lines)} · "
            f"{self.noise.tokens(body)} tokens · read in {self.noise.millis(1, 40)} ms]"
        )
        return Result(f"{body}\n{footer}")

    def _edit_file(self, args: dict[str, Any]) -> Result:
        path, old, new = str(args["path"]), str(args["old"]), str(args["new"])
        lines = self.files.get(path)
        if lines is None:
            return Result(f"error: {path}: No such file or directory", error=True)
        hits = [i for i, line in enumerate(lines) if old in line]
        if not hits:
            return Result(f"error: old string not found in {path}", error=True)
        if not args.get("replace_all") and len(hits) > 1:
            hits = hits[:1]
        for i in hits:
            lines[i] = lines[i].replace(old, new)
        self.revisions[path] = self.revisions.get(path, 1) + 1
        self.see(path)
        for task in self.tasks:
            task.edited(path, old, new)
        where = ", ".join(str(i + 1) for i in hits)
        plural = "s" if len(hits) > 1 else ""
        return Result(
            f"Edited {path}: {len(hits)} replacement{plural} (line{plural} {where}); "
            f"saved {sum(len(x) + 1 for x in lines):,} bytes at {self.noise.clock()}"
        )

    def _list_dir(self, args: dict[str, Any]) -> Result:
        folder = str(args.get("path", ".")).rstrip("/")
        prefix = "" if folder in ("", ".") else folder + "/"
        entries: dict[str, int] = {}
        for path, lines in self.files.items():
            if path.startswith(prefix):
                head = path[len(prefix) :].split("/", 1)
                name = head[0] + ("/" if len(head) > 1 else "")
                entries[name] = entries.get(name, 0) + sum(len(x) + 1 for x in lines)
        for task in self.tasks:
            entries.update(task.listing(prefix))
        if not entries:
            return Result(f"error: {folder}: No such file or directory", error=True)
        self.see(folder or ".")
        rows = []
        for name in sorted(entries):
            stamp = self.noise.log_time(-self.noise.millis(60_000, 90_000_000))
            rows.append(f"{entries[name]:>8}  {stamp}  {name}")
        return Result(f"total {len(rows)}\n" + "\n".join(rows))

    def _search(self, args: dict[str, Any]) -> Result:
        query = str(args["query"])
        under = str(args.get("path", ""))
        matches = [
            (path, n + 1, line.strip())
            for path, lines in sorted(self.files.items())
            if path.startswith(under)
            for n, line in enumerate(lines)
            if query in line
        ]
        offset = _search_offset(args)
        page = matches[offset : offset + SEARCH_PAGE]
        files = len({m[0] for m in matches})
        took = self.noise.millis(4, 90)
        self.see(query, *(m[0] for m in page))
        for task in self.tasks:
            task.searched(query, offset, len(matches))
        if not matches:
            return Result(f"0 matches for {query!r} ({took} ms)")
        body = "\n".join(f"{p}:{n}: {text}" for p, n, text in page)
        pages = math.ceil(len(matches) / SEARCH_PAGE)
        number = offset // SEARCH_PAGE + 1
        footer = f"page {number}/{pages} · {len(matches)} matches in {files} files · {took} ms"
        if offset + SEARCH_PAGE < len(matches):
            footer += f" · next_cursor: {search_cursor(query, offset + SEARCH_PAGE)}"
        return Result(f"{body}\n{footer} · {self.noise.tokens(body)} tokens")


def search_cursor(query: str, offset: int) -> str:
    """An opaque page cursor, as search APIs hand out: base64 of the position."""
    import base64

    raw = json.dumps({"q": query[:12], "o": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _search_offset(args: dict[str, Any]) -> int:
    import base64

    if "cursor" in args:
        text = str(args["cursor"])
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return int(json.loads(raw)["o"])
    if "offset" in args:
        return int(args["offset"])
    return (int(args.get("page", 1)) - 1) * SEARCH_PAGE


def _subject(text: str) -> str:
    inside = text[text.find("(") + 1 : text.rfind(")")]
    return inside.split(",", 1)[0].strip()
