"""LOCA-Bench: hkust-nlp/LOCA-bench checked out at its pinned commit.

What is prepared is the checkout itself (the parts the `loca` environment and LOCA's runtime
read: `gem/`, `mcp_convert/`, `task-configs/`, ... ; not the README's images or the trajectory
viewer), each part checked against the commit's git ids. LOCA's MCP-server runtime (a separate
venv and two npm servers) is built by `pos data get loca` after the checkout, through
`pos_agent.envs.loca.runtime`; it lives in its own cache folder.
"""

from __future__ import annotations

from pathlib import Path

from pos_agent.data.acquire import Pinned
from pos_agent.data.store import Manifest
from pos_agent.data.tree import SourceTree

PINNED = Pinned(
    repository="hkust-nlp/LOCA-bench",
    commit="8cd474d5efdf36c8c95555165ba0965e0496e48f",
    pins={
        "LICENSE": "0bd3ef9d8f565e1985c23647ff6b01df242a2499",
        "README.md": "9a8950bd9785f925e9dadd3738d5fc896b984c55",
        "gem": "64f2c0667dcad01848a8e0d042385f5a6cde145e",
        "inference": "7327af4e9f0fc3997e01b9d9e66d847826da57f0",
        "install.sh": "e8687aa9923a90e541bfdd4f02795765fa8d8a98",
        "loca": "1123838bc844adfdd3f8148df8d616ad1e6cab33",
        "mcp_convert": "debd43998fe6fa023bf96eec7987b0dfe586528c",
        "pyproject.toml": "1717e84ca4876e466c8eab8d635d6daeab0b5574",
        "setup.py": "f3593d969f89f688eaf8b6d17e0f26398d7fb9ea",
        "task-configs": "83874a4595d1a44513acf359b8d34aee93ba792a",
    },
)


def build(
    tree: SourceTree, pinned: Pinned, work: Path, manifest: Manifest, progress: object = None
) -> None:
    """Copy the pinned parts of the checkout into `work`."""
    for path in pinned.pins:
        tree.export(path, work / path)
    manifest.notes.append(
        f"checkout of {pinned.repository} at {pinned.commit[:12]}: {', '.join(pinned.pins)}"
    )
