"""`python -m pos_agent.envs.loca.runtime [--root DIR] [--rebuild]`: build LOCA's runtime once.

Prints where it is, how long the build took and how much disk it uses; does nothing when the
runtime is already current (`make loca-runtime` calls this).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from pos_agent.envs._types import EnvError
from pos_agent.envs.loca.runtime import (
    RUNTIME_ENV_VAR,
    LocaRuntime,
    build_runtime,
    default_runtime_dir,
    disk_usage,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pos_agent.envs.loca.runtime",
        description="Build LOCA-Bench's MCP-server runtime (a separate venv plus two npm "
        f"servers). Default folder: ${RUNTIME_ENV_VAR} or ~/.cache/pos-agent/loca-runtime.",
    )
    parser.add_argument("--root", type=Path, default=None, help="Runtime folder.")
    parser.add_argument(
        "--rebuild", action="store_true", help="Delete and rebuild even if it is current."
    )
    args = parser.parse_args(argv)
    root = (args.root or default_runtime_dir()).expanduser().resolve()
    runtime = LocaRuntime(root)
    if args.rebuild and root.exists():
        shutil.rmtree(root)
    if runtime.is_current():
        stamp = runtime.stamp()
        print(
            f"LOCA runtime is current at {root} (built {stamp.get('built_at')} in "
            f"{stamp.get('build_seconds')} s; {disk_usage(root) / 2**20:.0f} MiB)"
        )
        return 0
    started = time.monotonic()
    try:
        build_runtime(root, progress=lambda message: print(message, flush=True))
    except EnvError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        f"LOCA runtime build: {time.monotonic() - started:.1f} s, "
        f"{disk_usage(root) / 2**20:.0f} MiB at {root}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
