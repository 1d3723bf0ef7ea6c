"""pos_agent.belief."""
