"""Agent adapters: tool call → action, where the project root is, how to wire the agent."""
