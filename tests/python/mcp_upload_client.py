"""An MCP client with a workspace (the official Python SDK), as an agent in an editor is: it
declares its roots, lists the tools, then uploads files with `browser_file_upload` by the name
it listed (issue 58, item 10).

Run by tests/it/security/listed_upload.rs beside a scripted extension whose
tab b1:1 offers `browser_file_upload`. Environment: BROWSERCTL and BROWSER_MCP_SOCKET (the
binary and the daemon's control socket), or BROWSERCTL_COMMAND (the whole command line as a
JSON list), or BROWSER_MCP_URL and BROWSER_MCP_TOKEN (/mcp over Streamable HTTP);
UPLOAD_ROOT, the workspace directory; UPLOADS, a JSON list of [path, expected] where expected
is "ok" or words the refusal must contain; UPLOAD_VIA=meta makes each call through
`browserctl_call_tool` instead. Exits non-zero with a message on the first mismatch.
"""

import json
import os
from contextlib import asynccontextmanager

import anyio
from mcp import ClientSession, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from checks import browserctl_mcp, checker, texts

check = checker("python MCP upload client")


async def roots(_context):
    return types.ListRootsResult(roots=[types.Root(uri="file://" + os.environ["UPLOAD_ROOT"])])


@asynccontextmanager
async def streams():
    if "BROWSER_MCP_URL" in os.environ:
        headers = {"Authorization": "Bearer " + os.environ["BROWSER_MCP_TOKEN"]}
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(os.environ["BROWSER_MCP_URL"], http_client=client) as s:
                yield s[0], s[1]
        return
    server = browserctl_mcp()
    async with stdio_client(server) as (read, write):
        yield read, write


async def main():
    async with streams() as (read, write):
        async with ClientSession(read, write, list_roots_callback=roots) as session:
            await session.initialize()
            listed = await session.list_tools()
            names = [t.name for t in listed.tools]
            check("browser_file_upload" in names, f"browser_file_upload listed: {names}")
            for path, expected in json.loads(os.environ["UPLOADS"]):
                if os.environ.get("UPLOAD_VIA") == "meta":
                    r = await session.call_tool(
                        "browserctl_call_tool",
                        {"name": "browser_file_upload", "tab": "b1:1", "arguments": {"paths": [path]}},
                    )
                else:
                    r = await session.call_tool("browser_file_upload", {"paths": [path], "tab": "b1:1"})
                said = texts(r)
                if expected == "ok":
                    check(not r.is_error, f"{path} uploaded: {said}")
                else:
                    check(r.is_error and expected in said, f"{path} refused with {expected!r}: {said}")
    print("upload client: ok")


anyio.run(main)
