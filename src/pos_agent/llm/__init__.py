"""pos_agent.llm."""
