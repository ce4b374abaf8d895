"""``memrouter ui``: a local web app over the same Router the CLI and MCP server use.

Server-rendered HTML (Jinja2, autoescaped) with a little plain JavaScript
shipped in the package; nothing is fetched at run time. ``app`` builds the
Starlette app, ``security`` the token gate, security headers and CSRF check,
``render`` the sanitised markdown, ``server`` runs it on loopback (or, with a
token, anywhere). Importing this package imports nothing heavy.
"""

__all__: list[str] = []
