"""Small external agent programs for `mcp-hazard run --agent-cmd` tests (run as subprocesses, never imported)."""
