"""Hostile inputs through real transports: scenario files, tool arguments, JSON-RPC frames."""
