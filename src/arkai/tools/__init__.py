"""The agent surface: one tool registry (name@version, schemas, policy, audit) that the MCP
server (``arkai mcp``) and the agent loop (``arkai agent``) call; docs/agents.md."""
