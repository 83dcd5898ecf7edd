"""An independent MCP client (the official Python SDK) driving the daemon's /mcp over
Streamable HTTP in both protocol revisions: 2025-11-25 (initialize, a session, logging) and
2026-07-28 (server/discover, stateless requests, cache hints on lists).

Run by tests/python_sdk.rs, which starts a real browser-mcpd with a scripted extension that
offers tab 7 ("Search", tool `search`) and answers each callTool with "results for QUERY".
Environment: BROWSER_MCP_URL (the /mcp URL), BROWSER_MCP_TOKEN (the daemon's token).
Exits non-zero with a message on the first mismatch.
"""

import os

from contextlib import asynccontextmanager

import anyio
from checks import checker, texts
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

check = checker("python MCP HTTP client")


@asynccontextmanager
async def connected(url):
    """A client session on /mcp with the daemon's token, not yet initialized."""
    token = os.environ["BROWSER_MCP_TOKEN"]
    async with create_mcp_http_client(headers={"Authorization": "Bearer " + token}) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                yield session


async def legacy(url):
    async with connected(url) as session:
        init = await session.initialize()
        check(init.protocol_version == "2025-11-25", f"initialize version {init.protocol_version}")
        check(init.server_info.name == "browser-mcp", f"server name {init.server_info!r}")
        await session.set_logging_level("warning")
        listed = await session.list_tools()
        names = {t.name for t in listed.tools}
        for meta in ("browserctl_list_tools", "browserctl_call_tool"):
            check(meta in names, f"meta tool {meta} in {sorted(names)}")
        rows = await session.call_tool("browserctl_list_tools", {})
        tools = rows.structured_content["tools"]
        check(any(t["tab"] == "b1:7" and t["tool"] == "search" for t in tools), f"rows {tools}")
        ok = await session.call_tool(
            "browserctl_call_tool", {"name": "search", "arguments": {"query": "legacy"}}
        )
        check(not ok.is_error and texts(ok) == "results for legacy", f"meta call {ok}")


async def modern(url):
    async with connected(url) as session:
        found = await session.discover()
        check(session.protocol_version == "2026-07-28", f"discover version {session.protocol_version}")
        check("2025-11-25" in found.supported_versions, f"versions {found.supported_versions}")
        listed = await session.list_tools()
        check(listed.ttl_ms == 0, f"ttlMs {listed.ttl_ms}")
        check(str(listed.cache_scope).lower().endswith("private"), f"cacheScope {listed.cache_scope}")
        check(any(t.name == "search" for t in listed.tools), "search listed")
        ok = await session.call_tool("search", {"query": "modern"})
        check(not ok.is_error and texts(ok) == "results for modern", f"call {ok}")


async def main():
    url = os.environ["BROWSER_MCP_URL"]
    await legacy(url)
    await modern(url)
    print("python MCP HTTP client: ok")


anyio.run(main)
