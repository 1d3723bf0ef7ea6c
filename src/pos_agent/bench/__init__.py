"""pos_agent.bench."""
