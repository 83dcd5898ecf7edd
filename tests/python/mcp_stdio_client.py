"""An independent MCP client (the official Python SDK) driving `browserctl mcp` over stdio.

Run by tests/python_sdk.rs, which starts a real browser-mcpd with a scripted extension that
offers tab 7 ("Search", tool `search`) and answers the first callTool with "results for test".
Environment: BROWSERCTL (the binary), BROWSER_MCP_SOCKET (the daemon's control socket); or
BROWSERCTL_COMMAND, the whole command line as a JSON list (tests/it/remote: through ssh).
Exits non-zero with a message on the first mismatch.
"""

import anyio
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from checks import browserctl_mcp, checker, texts

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
}


check = checker("python MCP client")


async def main():
    server = browserctl_mcp()
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "browser-mcp", f"server name {init.server_info!r}")
            check(init.capabilities.tools is not None, "tools capability")

            await session.send_ping()

            listed = await session.list_tools()
            tools = {t.name: t for t in listed.tools}
            for meta in ("browserctl_list_tabs", "browserctl_open_tab", "browserctl_close_tab"):
                check(meta in tools, f"meta tool {meta} in {sorted(tools)}")
            check("search" in tools, f"search in {sorted(tools)}")
            search = tools["search"].model_dump(by_alias=True, mode="json", exclude_none=True)
            check(search["inputSchema"] == SEARCH_SCHEMA, f"schema intact: {search['inputSchema']}")
            check("b1:7" in search["description"], f"tab in description: {search['description']}")

            ok = await session.call_tool("search", {"query": "test"})
            check(not ok.is_error, f"call succeeded: {ok}")
            check(texts(ok) == "results for test", f"result text {texts(ok)!r}")

            bad = await session.call_tool("search", {})
            check(bad.is_error, f"missing argument is an error: {bad}")
            check(texts(bad).startswith("INVALID_ARGUMENTS: "), f"error code in text: {texts(bad)!r}")

            tabs = await session.call_tool("browserctl_list_tabs", {})
            check(tabs.structured_content["tabs"][0]["tab"] == "b1:7", f"tabs {tabs.structured_content}")
    print("python MCP client: ok")


anyio.run(main)
