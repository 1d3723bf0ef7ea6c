"""pos_agent.sentinel."""
