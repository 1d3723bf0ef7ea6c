"""How big a LOCA environment is: the tokens of its instruction, its mock services' databases
and its workspace files, counted in LOCA's runtime by the bridge (bridge.py) with LOCA's
tokenizer. Standard library only at module level."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

TEXT_SUFFIXES = {".csv", ".txt", ".md", ".yaml", ".yml", ".py", ".html", ".xml"}


def measure_environment(instruction: str, task_dir: Path) -> tuple[int | None, str]:
    """Tokens (GPT-4's cl100k_base, LOCA's tokenizer) of the environment's content: the
    instruction, every value in the mock services' databases (JSON leaves, SQLite rows) and the
    agent's workspace files (text, spreadsheet cells, PDF text).

    LOCA sizes an environment by the tool outputs an agent would have to read; this counts the
    data those outputs are made of, without the storage's own keys and cell metadata.
    """
    try:
        from bpe_openai import get_encoding

        encoding = get_encoding("cl100k_base")
    except Exception:
        return None, "unavailable"
    total = len(encoding.encode(instruction))
    for folder in (task_dir / "local_db", task_dir / "agent_workspace"):
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if path.is_file() and not path.name.startswith(".") and "memory" not in path.parts:
                text = _readable_text(path)
                if text:
                    total += len(encoding.encode(text, disallowed_special=()))
    return total, "cl100k_base"


def _json_values(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for item in value.values():
            _json_values(item, out)
    elif isinstance(value, list):
        for item in value:
            _json_values(item, out)
    elif value is not None and value != "":
        out.append(str(value))


def _readable_text(path: Path) -> str:
    suffix = path.suffix.lower()
    try:
        if suffix in (".json", ".jsonl"):
            raw = path.read_text(encoding="utf-8", errors="replace")
            values: list[str] = []
            try:
                documents = (
                    [json.loads(raw)]
                    if suffix == ".json"
                    else [json.loads(line) for line in raw.splitlines() if line.strip()]
                )
            except ValueError:
                return raw
            for document in documents:
                _json_values(document, values)
            return "\n".join(values)
        if suffix in (".db", ".sqlite", ".sqlite3"):
            import sqlite3

            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                tables = [
                    row[0]
                    for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
                ]
                lines = [
                    ",".join("" if cell is None else str(cell) for cell in row)
                    for table in tables
                    for row in db.execute(f'SELECT * FROM "{table}"')
                ]
            return "\n".join(lines)
        if suffix in TEXT_SUFFIXES or not suffix:
            return path.read_text(encoding="utf-8", errors="replace")
        if suffix in (".xlsx", ".xlsm"):
            from openpyxl import load_workbook

            book = load_workbook(path, read_only=True, data_only=True)
            rows = [
                ",".join("" if cell is None else str(cell) for cell in row)
                for sheet in book.worksheets
                for row in sheet.iter_rows(values_only=True)
            ]
            book.close()
            return "\n".join(rows)
        if suffix == ".pdf":
            from PyPDF2 import PdfReader

            return "\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
    except Exception:
        return ""
    return ""
