"""pos_agent.agents."""
