"""The vocabulary several packages share: task kinds, gap kinds and trap patterns.

One definition each, imported by `belief`, `health`, `envs` and `agents` (and re-exported
where their public API names them).
"""

from __future__ import annotations

from typing import Literal, get_args

TaskKind = Literal["execution", "diagnosis"]
"""Execution tasks (act until the goal holds) or diagnosis tasks (gather evidence, then answer)."""
TASK_KINDS: tuple[TaskKind, ...] = get_args(TaskKind)

GapKind = Literal["epistemic", "achievement"]
"""What a gap lacks: knowledge (epistemic) or a state of the world (achievement)."""
GAP_KINDS: tuple[GapKind, ...] = get_args(GapKind)

TrapPattern = Literal["static", "cycle", "drift"]
"""The trap patterns of the diagnosis (Eq. 6)."""
TRAP_PATTERNS: tuple[TrapPattern, ...] = get_args(TrapPattern)
