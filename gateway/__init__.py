"""The MCP gateway: Stratus as the approval gate for outside AI agents (docs/mcp.md)."""
