"""pos_agent.envs."""
