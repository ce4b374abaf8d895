"""memrouter's MCP server, in parts: ``service`` (what the tools do, no SDK),
``server`` (the MCP tools and resources), ``http`` (streamable HTTP with a bearer token).

Importing this package does not import the MCP SDK; ``memrouter.mcp.serve.serve``
is the entry point.
"""

__all__: list[str] = []
