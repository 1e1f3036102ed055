"""Open a session with the MCP server under evaluation, over stdio or streamable HTTP."""

from contextlib import asynccontextmanager


@asynccontextmanager
async def connect(command: list[str] | None = None, url: str | None = None):
    """Yield a ready client session; give either the server's command line or its URL."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    if command:
        params = StdioServerParameters(command=command[0], args=command[1:])
        transport = stdio_client(params)
    else:
        transport = streamablehttp_client(url or "http://127.0.0.1:8000/mcp")
    async with transport as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            yield session
