"""The MCP server: Citewell's knowledge for agents (Claude Desktop and Code, Cursor, VS Code,
Open WebUI's MCP tool servers), over Streamable HTTP at /mcp and over stdio (`citewell
mcp`). An adapter like the HTTP API: every tool goes through services.agent_tools with the
caller's access."""

from citewell.mcp_server.server import Caller, build_mcp_server

__all__ = ["Caller", "build_mcp_server"]
