"""Downloading an archive so that a broken or partial transfer is never taken for the file.

The bytes go to `<file>.part`; only a transfer that delivered every byte the server announced,
and whose SHA-256 matches the pinned one when there is a pin, is renamed to `<file>`. A `.part`
left by an interrupted transfer is discarded and the download starts over.
"""

from __future__ import annotations

import hashlib
import http.client
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlparse

from pos_agent.data.errors import DataError

Progress = Callable[[str], None]
TIMEOUT_S = 60
USER_AGENT = "pos-agent-data/1"


def local_path_of(url: str) -> Path | None:
    """The path of a `file://` URL, else None."""
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    if parsed.netloc not in ("", "localhost"):
        raise DataError(f"{url}: a file:// URL must name a local path (file:///PATH).")
    return Path(unquote(parsed.path))


def is_url(text: str) -> bool:
    return urlparse(text).scheme in ("http", "https", "file")


def download(
    url: str,
    target: Path,
    *,
    sha256: str | None = None,
    progress: Progress | None = None,
) -> str:
    """Fetch `url` into `target` and return its SHA-256; DataError (one line) on any failure."""
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    part.unlink(missing_ok=True)
    digest = hashlib.sha256()
    received = 0
    say = progress or (lambda _message: None)
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response, part.open("wb") as out:
            announced = response.headers.get("Content-Length")
            expected = int(announced) if announced and announced.isdigit() else None
            say(f"downloading {url}" + (f" ({expected / 2**20:.1f} MiB)" if expected else ""))
            for chunk in iter(lambda: response.read(1 << 20), b""):
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        part.unlink(missing_ok=True)
        reason = getattr(exc, "reason", None) or exc
        raise DataError(
            f"Could not download {url} ({reason}); with no network, get the file elsewhere and "
            "pass it with --from PATH (a file:// URL works too)."
        ) from exc
    if expected is not None and received != expected:
        part.unlink(missing_ok=True)
        raise DataError(
            f"The download of {url} stopped after {received} of {expected} bytes; run the same "
            "command again."
        )
    got = digest.hexdigest()
    if sha256 is not None and got != sha256:
        part.unlink(missing_ok=True)
        raise DataError(
            f"{url} has SHA-256 {got}, not the pinned {sha256}: the file is corrupt or not the "
            "pinned one. Nothing was prepared."
        )
    shutil.move(part, target)
    return got
