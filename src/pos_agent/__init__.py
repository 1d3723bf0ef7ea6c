"""PoS: explicit, validated belief states and Belief-Trapping detection for LLM agents."""

__version__ = "0.1.0"
