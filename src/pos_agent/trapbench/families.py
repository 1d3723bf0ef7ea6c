"""The corpus families of `pos trapbench`: TextWorld games and the tool-agent workspace."""

from __future__ import annotations

from typing import Literal

Family = Literal["textworld", "tools", "all"]
FAMILY_CHOICES = ("textworld", "tools", "all")
FAMILIES = ("textworld", "tools")
"""Table order of the families."""
