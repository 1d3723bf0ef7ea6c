"""The Belief Sentinel: deterministic rules (`rules.py`) and the LLM audit (`audit.py`)."""

from pos_agent.sentinel.rules import RULES, Finding, check_rules, normalize_quote

__all__ = ["RULES", "Finding", "check_rules", "normalize_quote"]
