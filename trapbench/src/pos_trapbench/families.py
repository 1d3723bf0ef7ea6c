"""The corpus families of `pos trapbench`: TextWorld games, the tool-agent workspace, and the
held-out tool-agent workspace `tools-b` (another generator, used to check generalisation)."""

from __future__ import annotations

from typing import Literal

Family = Literal["textworld", "tools", "tools-b", "all"]
FAMILY_CHOICES = ("textworld", "tools", "tools-b", "all")
FAMILIES = ("textworld", "tools", "tools-b")
"""Table order of the families."""
