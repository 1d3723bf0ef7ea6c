"""SQLite record/replay of model answers, safe with several worker processes at once."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_agent.llm._options import CacheMode
from pos_agent.llm._structured import JsonSchema, canonical_json
from pos_agent.llm._types import STRUCTURED_MODES, FailureKind, Message, StructuredMode, Usage

logger = logging.getLogger(__name__)

# Bump when the key payload or the meaning of a row changes; old rows then simply miss.
CACHE_FORMAT = 1
_BUSY_TIMEOUT_S = 30.0
_WAL_SWITCH_TRIES = 20

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    base_url TEXT,
    request TEXT NOT NULL,
    text TEXT,
    parsed TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    repairs INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    failure_kind TEXT,
    failure_message TEXT,
    created_at REAL NOT NULL,
    structured_mode TEXT
)
"""
# Files written before the structured_mode column existed get it added on open.
_ADD_MODE_COLUMN = "ALTER TABLE responses ADD COLUMN structured_mode TEXT"
_COLUMNS = (
    "key, backend, model, base_url, request, text, parsed, prompt_tokens, completion_tokens, "
    "repairs, attempts, latency_s, failure_kind, failure_message, created_at, structured_mode"
)


@dataclass(frozen=True)
class CacheRequest:
    """Everything that decides a model's answer; its hash is the cache key.

    `base_url` must already be stripped of credentials (see `public_url`); no API key is part
    of a request, so none can reach a row.
    """

    backend: str
    model: str
    base_url: str | None
    messages: tuple[Message, ...]
    schema: JsonSchema | None
    max_tokens: int
    temperature: float
    seed: int
    max_repairs: int

    def payload(self) -> dict[str, Any]:
        return {
            "format": CACHE_FORMAT,
            "backend": self.backend,
            "model": self.model,
            "base_url": self.base_url,
            "messages": [[m.role, m.content] for m in self.messages],
            "schema": self.schema,
            "params": {
                "max_tokens": self.max_tokens,
                "temperature": self.temperature,
                "seed": self.seed,
                "max_repairs": self.max_repairs,
            },
        }

    def key(self) -> str:
        # surrogatepass: a prompt holding a lone surrogate still gets a key (and a distinct one).
        data = canonical_json(self.payload()).encode("utf-8", errors="surrogatepass")
        return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class CachedOutcome:
    """A recorded answer, or a recorded output failure (kind schema/empty/truncated)."""

    text: str | None
    parsed: Any
    usage: Usage
    repairs: int
    attempts: int
    latency_s: float
    failure_kind: FailureKind | None = None
    failure_message: str | None = None
    structured_mode: StructuredMode | None = None


def cache_key(
    *,
    backend: str,
    model: str,
    base_url: str | None,
    messages: Sequence[Message],
    schema: JsonSchema | None,
    max_tokens: int,
    temperature: float,
    seed: int,
    max_repairs: int,
) -> str:
    """sha256 of the canonical JSON of the request (stable across processes and machines)."""
    return CacheRequest(
        backend,
        model,
        base_url,
        tuple(messages),
        schema,
        max_tokens,
        temperature,
        seed,
        max_repairs,
    ).key()


class ResponseCache:
    """Record/replay store in one SQLite file (WAL mode, busy timeout, short transactions).

    Each process opens its own connection on first use, so an instance can be handed to
    worker processes. Storage errors never reach the caller: a broken cache logs a warning and
    behaves as a miss, whatever went wrong (a locked or corrupt file, a full disk, text that
    cannot be encoded, a row that cannot be read back).
    """

    def __init__(self, path: str | os.PathLike[str], mode: CacheMode = "readwrite") -> None:
        self.path = Path(path)
        self.mode: CacheMode = mode
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid: int | None = None

    @property
    def readable(self) -> bool:
        return self.mode in ("read", "readwrite")

    @property
    def writable(self) -> bool:
        return self.mode in ("write", "readwrite")

    def __repr__(self) -> str:
        return f"ResponseCache(path={str(self.path)!r}, mode={self.mode!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "mode": self.mode}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["mode"])  # type: ignore[misc]

    def get(self, key: str) -> CachedOutcome | None:
        if not self.readable:
            return None
        if self.mode == "read" and not self.path.exists():
            return None
        # Storage must never fail a call (the class promise): any error is a logged miss.
        try:
            with self._lock:
                row = (
                    self._connect()
                    .execute(
                        "SELECT text, parsed, prompt_tokens, completion_tokens, repairs, "
                        "attempts, latency_s, failure_kind, failure_message, structured_mode "
                        "FROM responses WHERE key = ?",
                        (key,),
                    )
                    .fetchone()
                )
            if row is None:
                return None
            return _outcome_of(row)
        except Exception as exc:
            logger.warning("response cache %s unreadable, treating as a miss: %s", self.path, exc)
            return None

    def put(self, request: CacheRequest, outcome: CachedOutcome) -> None:
        if not self.writable:
            return
        # Storage must never fail a call (the class promise): any error is a logged skip.
        try:
            self._put(request, outcome)
        except Exception as exc:
            logger.warning("response cache %s not written: %s", self.path, exc)

    def _put(self, request: CacheRequest, outcome: CachedOutcome) -> None:
        row = (
            request.key(),
            request.backend,
            request.model,
            request.base_url,
            canonical_json(request.payload()),
            outcome.text,
            None if outcome.parsed is None else canonical_json(outcome.parsed),
            outcome.usage.prompt_tokens,
            outcome.usage.completion_tokens,
            outcome.repairs,
            outcome.attempts,
            outcome.latency_s,
            outcome.failure_kind,
            outcome.failure_message,
            time.time(),
            outcome.structured_mode,
        )
        with self._lock:
            connection = self._connect()
            # One statement in its own immediate transaction: writers queue on the busy
            # timeout instead of failing, and hold the lock for microseconds.
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute(
                    f"INSERT OR REPLACE INTO responses ({_COLUMNS}) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def count(self) -> int:
        """Number of stored rows (0 when the file is missing or unreadable)."""
        if not self.path.exists():
            return 0
        try:
            with self._lock:
                (n,) = self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()
        except (sqlite3.Error, OSError):
            return 0
        return int(n)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None
            self._pid = None

    def _connect(self) -> sqlite3.Connection:
        # A connection must not cross a fork: reopen in each process.
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(
            self.path,
            timeout=_BUSY_TIMEOUT_S,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            _switch_to_wal(connection)
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute(_CREATE_TABLE)
            _add_mode_column(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._pid = os.getpid()
        return connection


def _outcome_of(row: tuple[Any, ...]) -> CachedOutcome | None:
    text, parsed, prompt_tokens, completion_tokens, repairs, attempts, latency, kind, why, mode = (
        row
    )
    try:
        parsed_value = json.loads(parsed) if parsed is not None else None
    except json.JSONDecodeError:
        return None
    return CachedOutcome(
        text=text,
        parsed=parsed_value,
        usage=Usage(int(prompt_tokens), int(completion_tokens)),
        repairs=int(repairs),
        attempts=int(attempts),
        latency_s=float(latency),
        failure_kind=kind,
        failure_message=why,
        structured_mode=mode if mode in STRUCTURED_MODES else None,
    )


def _add_mode_column(connection: sqlite3.Connection) -> None:
    columns = {row[1] for row in connection.execute("PRAGMA table_info(responses)")}
    if "structured_mode" in columns:
        return
    try:
        connection.execute(_ADD_MODE_COLUMN)
    except sqlite3.OperationalError as exc:
        if "duplicate column" not in str(exc):  # another process added it first
            raise


def _switch_to_wal(connection: sqlite3.Connection) -> None:
    # Several processes opening a new file at once can see SQLITE_BUSY on the journal-mode
    # switch even with a busy timeout; it succeeds once the first one has finished.
    for attempt in range(_WAL_SWITCH_TRIES):
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == _WAL_SWITCH_TRIES - 1:
                raise
            time.sleep(0.02 * (attempt + 1))
