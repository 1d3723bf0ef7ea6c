"""LOCA-Bench's own runtime: a Python environment and two npm servers, outside the project's lock.

LOCA's MCP servers need pinned packages (fastmcp 2.14.5, mcp 1.26.0, ...) that must not enter
`uv.lock`, so they live in a separate, cached folder:

    <runtime>/venv/           Python 3.11/3.12 venv with the pins of requirements.txt
    <runtime>/node/           npm ci of npm/package-lock.json (server-filesystem, server-memory)
    <runtime>/runtime.json    written last: what was built, from which pins, and how long it took

`<runtime>` is `$POS_LOCA_RUNTIME`, default `~/.cache/pos-agent/loca-runtime` (under the home
folder on purpose: tests point XDG caches at temporary folders, and the runtime must survive
them). `make loca-runtime` builds it; the LOCA environment builds it on first use. Nothing is
fetched after that: every server starts from the installed interpreter, console script or npm
bin, never through `uvx` or `npx`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pos_agent.envs._types import EnvError

RUNTIME_ENV_VAR = "POS_LOCA_RUNTIME"
_HERE = Path(__file__).resolve().parent
REQUIREMENTS = _HERE / "requirements.txt"
NPM_PACKAGE = _HERE / "npm" / "package.json"
NPM_LOCK = _HERE / "npm" / "package-lock.json"
# Declares Python >= 3.12 but runs on 3.11 (its code needs nothing newer): installed without its metadata
# checks; its one missing import (PyPDF2) is in requirements.txt.
PDF_TOOLS = "pdf-tools-mcp==0.1.4"
# Bump when the layout or the build steps change, so old runtimes are rebuilt.
BUILD_FORMAT = 1
STAMP = "runtime.json"
SUPPORTED_PYTHONS = ((3, 11), (3, 12))

Progress = Callable[[str], None]


def default_runtime_dir() -> Path:
    """`$POS_LOCA_RUNTIME`, else `~/.cache/pos-agent/loca-runtime`."""
    chosen = os.environ.get(RUNTIME_ENV_VAR)
    if chosen:
        return Path(chosen).expanduser().resolve()
    return Path.home() / ".cache" / "pos-agent" / "loca-runtime"


def fingerprint() -> str:
    """What the runtime is built from: the pins, the npm lock and the build format."""
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, NPM_LOCK):
        digest.update(path.read_bytes())
    digest.update(f"{PDF_TOOLS}|{BUILD_FORMAT}".encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class LocaRuntime:
    """A built runtime: where its interpreter, console scripts and npm servers are."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    @property
    def bin_dir(self) -> Path:
        return self.root / "venv" / "bin"

    @property
    def node_modules(self) -> Path:
        return self.root / "node" / "node_modules"

    def console_script(self, name: str) -> Path:
        """A console script of the venv (excel-mcp-server, cli-mcp-server, pdf-tools-mcp)."""
        path = self.bin_dir / name
        if not path.is_file():
            raise EnvError(
                f"The LOCA runtime at {self.root} has no {name}; rebuild it with "
                "`make loca-runtime` (or delete the folder to rebuild on first use)."
            )
        return path

    def npm_server(self, package: str) -> Path:
        """The installed bin of an npm MCP server package (what `npx PACKAGE` would run)."""
        manifest = self.node_modules / package / "package.json"
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EnvError(
                f"The npm server {package} is not installed in the LOCA runtime at {self.root}; "
                "rebuild it with `make loca-runtime`."
            ) from exc
        bins = data.get("bin")
        target = bins if isinstance(bins, str) else next(iter((bins or {}).values()), None)
        if not isinstance(target, str):
            raise EnvError(f"{manifest} names no executable (`bin`).")
        return (manifest.parent / target).resolve()

    def stamp(self) -> dict[str, object]:
        try:
            data = json.loads((self.root / STAMP).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def is_current(self) -> bool:
        """Built completely, from the pins this package ships."""
        return self.stamp().get("fingerprint") == fingerprint() and self.python.is_file()


def find_runtime(root: Path | None = None) -> LocaRuntime | None:
    """The runtime at `root` (default location when None) if it is built and current."""
    runtime = LocaRuntime(root or default_runtime_dir())
    return runtime if runtime.is_current() else None


def ensure_runtime(
    root: Path | None = None, *, build: bool = True, progress: Progress | None = None
) -> LocaRuntime:
    """A current runtime, built first when it is missing or stale (unless `build` is False)."""
    runtime = LocaRuntime(root or default_runtime_dir())
    if runtime.is_current():
        return runtime
    if not build:
        raise EnvError(
            f"The LOCA runtime is not built at {runtime.root}. Build it once with "
            f"`make loca-runtime` (needs PyPI and npm access, about a minute), or set "
            f"{RUNTIME_ENV_VAR} to a folder that holds one."
        )
    return build_runtime(runtime.root, progress=progress)


@contextmanager
def _build_lock(root: Path) -> Iterator[None]:
    """One builder at a time per runtime folder (parallel workers may all need it at once)."""
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_runtime(root: Path, *, progress: Progress | None = None) -> LocaRuntime:
    """Build the runtime at `root` from the registries (PyPI and npm); raise EnvError on failure.

    The stamp is written last, so an interrupted build is never taken for a finished one.
    """
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    runtime = LocaRuntime(root)
    with _build_lock(root):
        if runtime.is_current():  # another worker finished it while we waited
            return runtime
        started = time.monotonic()
        node, npm = shutil.which("node"), shutil.which("npm")
        if not node or not npm:
            raise EnvError(
                "The LOCA runtime needs Node.js and npm for its filesystem and memory servers. "
                "Install them (Debian/Ubuntu: `apt-get install nodejs npm`) and retry."
            )
        interpreter = _base_interpreter()
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        say(f"LOCA runtime: building at {root} (Python {interpreter[1]}, once; cached after)")
        _python_env(runtime, interpreter[0], say)
        say("LOCA runtime: npm servers (server-filesystem, server-memory)")
        node_dir = root / "node"
        node_dir.mkdir()
        shutil.copy2(NPM_PACKAGE, node_dir / "package.json")
        shutil.copy2(NPM_LOCK, node_dir / "package-lock.json")
        _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=node_dir)
        _smoke_test(runtime)
        seconds = round(time.monotonic() - started, 1)
        stamp = {
            "fingerprint": fingerprint(),
            "python": interpreter[1],
            "node": _output([node, "--version"]).strip(),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "build_seconds": seconds,
        }
        (root / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        say(f"LOCA runtime: ready in {seconds:.0f} s, {disk_usage(root) / 2**20:.0f} MiB")
    return runtime


def _base_interpreter() -> tuple[str, str]:
    """A Python 3.11 or 3.12 to build the venv from: this one if it fits, else one on PATH."""
    candidates = [sys.executable, *(shutil.which(f"python3.{m}") for _, m in SUPPORTED_PYTHONS)]
    for candidate in candidates:
        if not candidate:
            continue
        try:
            version = _output(
                [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
            ).strip()
        except EnvError:
            continue
        if tuple(int(p) for p in version.split(".")) in SUPPORTED_PYTHONS:
            return candidate, version
    raise EnvError(
        "The LOCA runtime needs Python 3.11 or 3.12 (LOCA's pins do not support newer ones); "
        "install one so that python3.11 or python3.12 is on PATH."
    )


def _python_env(runtime: LocaRuntime, interpreter: str, say: Progress) -> None:
    venv = runtime.root / "venv"
    uv = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    if Path(uv).is_file():
        say("LOCA runtime: Python packages with uv (fastmcp 2.14.5, mcp 1.26.0, ...)")
        _run([uv, "venv", "--quiet", "--seed", "--python", interpreter, str(venv)])
        _run(
            [
                uv,
                "pip",
                "install",
                "--quiet",
                "--python",
                str(runtime.python),
                "-r",
                str(REQUIREMENTS),
            ]
        )
    else:
        say("LOCA runtime: Python packages with pip (fastmcp 2.14.5, mcp 1.26.0, ...)")
        _run([interpreter, "-m", "venv", str(venv)])
        _run([str(runtime.python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)])
    _run(
        [
            str(runtime.python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--ignore-requires-python",
            PDF_TOOLS,
        ]
    )


def _smoke_test(runtime: LocaRuntime) -> None:
    """Fail the build now, not in the first case, if an import or a server is missing."""
    _output([str(runtime.python), "-c", "import fastmcp, mcp, pandas, openpyxl, bpe_openai"])
    for script in ("excel-mcp-server", "cli-mcp-server", "pdf-tools-mcp"):
        runtime.console_script(script)
    for package in (
        "@modelcontextprotocol/server-filesystem",
        "@modelcontextprotocol/server-memory",
    ):
        if not runtime.npm_server(package).is_file():
            raise EnvError(f"npm ci did not install {package} in {runtime.root}.")


def _run(command: list[str], cwd: Path | None = None) -> None:
    completed = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
    )
    if completed.returncode != 0:
        tail = (completed.stderr or completed.stdout).strip()[-2000:]
        raise EnvError(
            f"Building the LOCA runtime failed at `{' '.join(command[:4])} ...` "
            f"(exit {completed.returncode}):\n{tail}\nIt needs PyPI and the npm registry; "
            "fix the cause and run `make loca-runtime` again."
        )


def _output(command: list[str]) -> str:
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
        )
    except OSError as exc:
        raise EnvError(f"Cannot run {command[0]}: {exc}") from exc
    if completed.returncode != 0:
        raise EnvError(f"`{' '.join(command)}` failed: {completed.stderr.strip()[-1000:]}")
    return completed.stdout


def disk_usage(root: Path) -> int:
    """Bytes under `root` (files only, symlinks not followed)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                total += path.stat().st_size
    return total
