"""The Belief Sentinel: deterministic rules (and, in the agent, the LLM audit and revision)."""

from pos_agent.sentinel.rules import RULES, Finding, check_rules, normalize_quote

__all__ = ["RULES", "Finding", "check_rules", "normalize_quote"]
