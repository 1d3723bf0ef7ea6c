"""pos_agent.health."""
