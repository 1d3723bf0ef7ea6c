"""Argument schemas several RCA tools share."""

from __future__ import annotations

from pos_agent.envs.tools import string_param

TIME_HELP = "ISO-8601 (2023-01-29T09:41:00Z) or HH:MM[:SS] on the alert's date (UTC)"
ENTITY = string_param("A service, pod or node name as list_entities shows it.")
START = string_param(f"Window start, {TIME_HELP}.")
END = string_param(f"Window end, {TIME_HELP}.")
BASELINE_END = string_param(f"End of the baseline period, {TIME_HELP}.")
