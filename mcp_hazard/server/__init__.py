"""The MCP server: one low-level SDK server, many episodes, over stdio and Streamable HTTP.

A regular package (not a namespace one) so import analysis sees it as the floor it is (docs/decisions.md, "Floors").
Nothing is re-exported here: `serve` over stdio imports only the modules it uses.
"""
