"""pos_agent.perf."""
