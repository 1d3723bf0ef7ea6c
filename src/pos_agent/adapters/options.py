"""Which tools the monitor treats apart, as `pos serve` and the adapters take them: polling tools
(a status check that is normal to repeat, up to N calls in a row) and exempt tools (never
judged), from the command line's `NAME[=N]` words or from a YAML or TOML file.

    from pos_agent.adapters import Guard, monitor_options

    guard = Guard(goal="deploy the service", **monitor_options("pos.toml"))
    guard = Guard(goal="...", polling_tools={"job_status": 12}, exempt_tools=["plan"])

The file is the one `pos serve --config FILE` reads; its `polling_tools` and `exempt_tools`
keys go to the monitor (`TrapMonitor(polling_tools=..., exempt_tools=...)`):

    polling_tools = { job_status = 12, wait_for_deploy = 30 }   # or ["job_status=12", "ci"]
    exempt_tools = ["plan", "remember"]
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_POLLS",
    "exempt_option",
    "monitor_options",
    "polling_option",
    "polling_tools",
    "read_config_file",
]

DEFAULT_POLLS = 10
"""Calls in a row that are normal for a polling tool declared without a number."""


def polling_option(text: str) -> tuple[str, int]:
    """`NAME` or `NAME=N` (N >= 1) as (name, N); `NAME` alone allows `DEFAULT_POLLS`."""
    name, _, count = str(text).partition("=")
    name = name.strip()
    if not name:
        raise ValueError(f"a polling tool needs a name: {text!r} (NAME or NAME=N)")
    if not count.strip():
        return name, DEFAULT_POLLS
    try:
        polls = int(count)
    except ValueError:
        raise ValueError(f"{text!r}: N must be a whole number (NAME=N)") from None
    if polls < 1:
        raise ValueError(f"{text!r}: N must be at least 1")
    return name, polls


def polling_tools(value: object) -> dict[str, int]:
    """Polling tools from a mapping `{name: N}` or a list of `NAME[=N]` words."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        out = {}
        for name, polls in value.items():
            if isinstance(polls, bool) or not isinstance(polls, int) or polls < 1:
                raise ValueError(
                    f"polling_tools: {name!r} needs a whole number >= 1, not {polls!r}"
                )
            out[str(name)] = polls
        return out
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError("polling_tools must be a table {name: N} or a list of NAME[=N]")
    return dict(polling_option(str(item)) for item in value)


def exempt_option(value: object) -> list[str]:
    """Exempt tools from a list of names (or one name)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise ValueError("exempt_tools must be a list of tool names")
    return [str(name).strip() for name in value if str(name).strip()]


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A YAML (`.yaml`, `.yml`) or TOML (anything else) file as a dict, keys with `-` written
    as `_`. A file that cannot be read or parsed raises `ValueError` saying why."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror or error}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:  # pragma: no cover - yaml comes with the cli extra
            raise ValueError(
                f"{path}: reading YAML needs pyyaml (or write the file as TOML)"
            ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ValueError(f"{path} is not valid YAML: {error}") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{path} is not valid TOML: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a table of options at the top")
    return {str(key).replace("-", "_"): value for key, value in data.items()}


def monitor_options(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """The monitor's `polling_tools` and `exempt_tools` from a config file or a mapping (other
    keys are left out), ready for `Guard(**...)`, `TrapMonitor(**...)` or an adapter."""
    data = dict(source) if isinstance(source, Mapping) else read_config_file(source)
    data = {str(k).replace("-", "_"): v for k, v in data.items()}
    return {
        "polling_tools": polling_tools(data.get("polling_tools")),
        "exempt_tools": exempt_option(data.get("exempt_tools")),
    }
