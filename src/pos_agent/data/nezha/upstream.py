"""Reading one date of Nezha's `rca_data/` (the upstream layout) into plain Python values.

A date folder holds `<date>-fault_list.json` (injections by hour), `metric/<pod>_metric.csv`
(one row a minute per pod), `metric/front_service.csv` (the entry service's SLO series),
`metric/dependency.csv` (Online Boutique's call graph and pod hosts), and per-minute
`log/HH_MM_log.csv` and `trace/HH_MM_trace.csv`. Some files can be absent from a copy (a
snapshot that drops large files); `files()` says which.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from pos_agent.data.errors import DataError
from pos_agent.data.tree import SourceTree

ROOT = "rca_data"
SYSTEMS = {"online-boutique": "ob", "train-ticket": "tt"}
ENTRY_SERVICE = {"online-boutique": "frontend", "train-ticket": "ts-ui-dashboard"}
TITLES = {
    "online-boutique": "Online Boutique (hipster shop)",
    "train-ticket": "TrainTicket",
}
_POD_SUFFIX = re.compile(r"-[0-9a-z]{6,10}-[0-9a-z]{5}$")
KEEP_TABLES = 8
_MINUTE_FILE = re.compile(r"^(\d\d)_(\d\d)_(log|trace)\.csv$")


def service_of(pod: str) -> str:
    """A pod's service: its name without the ReplicaSet hash and pod suffix."""
    return _POD_SUFFIX.sub("", pod)


def system_of(pods: list[str]) -> str:
    return "train-ticket" if any(pod.startswith("ts-") for pod in pods) else "online-boutique"


def utc_seconds(text: str) -> int:
    """`2022-08-22 03:51:19...` (any suffix) read as UTC, in whole seconds since the epoch."""
    try:
        moment = datetime.strptime(text[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    except ValueError as exc:
        raise DataError(f"Nezha: unreadable time {text!r}") from exc
    return int(moment.timestamp())


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Injection:
    """One fault of a fault list."""

    date: str
    hour: str
    index: int
    time: int
    """`inject_time` read as UTC (seconds)."""
    timestamp: int
    """`inject_timestamp` as given (disagrees with `time` for some injections)."""
    pod: str
    kind: str

    @property
    def source(self) -> str:
        return f"Nezha {self.date} {self.hour} #{self.index}"


@dataclass(frozen=True)
class MinuteFile:
    """A per-minute log or trace file: its minute (seconds) and whether its content is here."""

    name: str
    minute: int
    present: bool


class DateFolder:
    """One `rca_data/<date>/` folder, read lazily and cached."""

    def __init__(self, tree: SourceTree, date: str) -> None:
        self.tree = tree
        self.date = date
        self.base = f"{ROOT}/{date}"
        self._tables: dict[str, list[dict[str, str]]] = {}
        self._minute_files: dict[str, list[MinuteFile]] = {}

    def read_text(self, path: str) -> str | None:
        raw = self.tree.read(f"{self.base}/{path}")
        return None if raw is None else raw.decode("utf-8", errors="replace")

    def csv_rows(self, path: str) -> list[dict[str, str]] | None:
        """A CSV file's rows as dicts (None when the file's content is absent). The last few
        files read are kept, since a case reads its log files more than once."""
        if path in self._tables:
            self._tables[path] = self._tables.pop(path)
            return self._tables[path]
        text = self.read_text(path)
        if text is None:
            return None
        rows = list(csv.DictReader(io.StringIO(text)))
        self._tables[path] = rows
        while len(self._tables) > KEEP_TABLES:
            self._tables.pop(next(iter(self._tables)))
        return rows

    def injections(self) -> list[Injection]:
        text = self.read_text(f"{self.date}-fault_list.json")
        if text is None:
            raise DataError(f"Nezha: {self.base}/{self.date}-fault_list.json is missing.")
        found = []
        for hour, faults in sorted(json.loads(text).items()):
            for index, fault in enumerate(faults):
                found.append(
                    Injection(
                        date=self.date,
                        hour=hour,
                        index=index,
                        time=utc_seconds(fault["inject_time"]),
                        timestamp=int(fault["inject_timestamp"]),
                        pod=fault["inject_pod"],
                        kind=fault["inject_type"],
                    )
                )
        return sorted(found, key=lambda injection: injection.time)

    def pods(self) -> list[str]:
        """The pods with a metric file, sorted."""
        suffix = "_metric.csv"
        return sorted(
            entry.name[: -len(suffix)]
            for entry in self.tree.entries(f"{self.base}/metric")
            if entry.name.endswith(suffix)
        )

    def minute_files(self, kind: str) -> list[MinuteFile]:
        """The per-minute files of `kind` (`log` or `trace`) the date lists, by minute."""
        if kind not in self._minute_files:
            self._minute_files[kind] = self._list_minute_files(kind)
        return self._minute_files[kind]

    def _list_minute_files(self, kind: str) -> list[MinuteFile]:
        day = utc_seconds(f"{self.date} 00:00:00")
        files = []
        for entry in self.tree.entries(f"{self.base}/{kind}"):
            match = _MINUTE_FILE.match(entry.name)
            if match is None or match.group(3) != kind:
                continue
            minute = day + int(match.group(1)) * 3600 + int(match.group(2)) * 60
            present = self.tree.has(f"{self.base}/{kind}/{entry.name}")
            files.append(MinuteFile(entry.name, minute, present))
        return sorted(files, key=lambda item: item.minute)


def list_dates(tree: SourceTree) -> list[str]:
    return sorted(entry.name for entry in tree.entries(ROOT) if entry.kind == "tree")
