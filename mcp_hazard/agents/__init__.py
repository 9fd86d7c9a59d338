"""Reference agents: scripted MCP clients that drive an episode."""
