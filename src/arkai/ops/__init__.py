"""Operations: one module per user-visible operation, called by the CLI, stages and MCP."""
