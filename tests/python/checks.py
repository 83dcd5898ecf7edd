"""What the Python MCP clients of tests/python_sdk.rs share: a check that stops the script at the
first mismatch with a message, a result's text, and how to start `browserctl mcp`."""

import json
import os
import sys


def checker(who):
    """`check(cond, what)` for one client: exits non-zero, naming the client, on a mismatch."""

    def check(cond, what):
        if not cond:
            print(f"{who}: FAILED: {what}", file=sys.stderr)
            sys.exit(1)

    return check


def texts(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


def browserctl_mcp():
    """`browserctl mcp` as the environment names it: BROWSERCTL_COMMAND, the whole command line
    as a JSON list (through ssh in tests/it/remote), else BROWSERCTL and BROWSER_MCP_SOCKET."""
    from mcp import StdioServerParameters

    if "BROWSERCTL_COMMAND" in os.environ:
        argv = json.loads(os.environ["BROWSERCTL_COMMAND"])
        return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    return StdioServerParameters(
        command=os.environ["BROWSERCTL"],
        args=["--socket", os.environ["BROWSER_MCP_SOCKET"], "mcp"],
    )
