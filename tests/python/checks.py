"""What the Python MCP clients of tests/python_sdk.rs share: a check that stops the script at the
first mismatch with a message, and a result's text."""

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
