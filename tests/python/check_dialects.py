#!/usr/bin/env python3
"""An independent check of browser-mcpd's register (seed 002) and JSON-RPC (seed 003)
dialects, written from the seed documents only, with the `websockets` library.

Usage: check_dialects.py PATH/TO/browser-mcpd

It starts the daemon on a free loopback port with temporary paths, plays a seed-002
extension, a seed-003 browser and a seed-003 agent against it, and stops it again.
Exit status 0 means every check passed.
"""

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import websockets
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

# Loopback only: never through a proxy from the environment.
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def connect(url, **kw):
    # websockets 15 and later read proxies from the environment; earlier ones have no `proxy`.
    if int(websockets.__version__.split(".")[0]) >= 15:
        kw["proxy"] = None
    return ws_connect(url, **kw)


SEED_CODES = {-32700, -32600, -32601, -32602, -32603, -32000}
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


async def recv_json(ws, timeout=10):
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def recv_until(ws, pred, what, timeout=10):
    """The next message matching pred; the others are returned too, in order."""
    skipped = []
    while True:
        m = await recv_json(ws, timeout)
        if pred(m):
            return m, skipped
        skipped.append(m)


def start_daemon(binary, tmp):
    disco = os.path.join(tmp, "discovery")
    log = open(os.path.join(tmp, "daemon.log"), "wb")
    proc = subprocess.Popen(
        [binary, "--port", "0", "--socket", os.path.join(tmp, "ctl.sock"),
         "--discovery-dir", disco],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        env={k: v for k, v in os.environ.items() if k not in ("RUST_LOG", "NOTIFY_SOCKET")},
    )
    path = os.path.join(disco, f"server-{proc.pid}.json")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"browser-mcpd exited early with {proc.returncode}")
        try:
            with open(path) as f:
                return proc, json.load(f)
        except (OSError, ValueError):
            time.sleep(0.02)
    proc.kill()
    raise SystemExit("browser-mcpd did not write its discovery file")


def register(port, body):
    req = urllib.request.Request(
        f"http://localhost:{port}/register", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    with NO_PROXY.open(req, timeout=10) as resp:
        return resp.status, json.load(resp)


def rpc(id_, method, params=None):
    m = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m)


async def request(ws, id_, method, params=None):
    await ws.send(rpc(id_, method, params))
    m, _ = await recv_until(ws, lambda m: isinstance(m, dict) and m.get("id") == id_
                            and "method" not in m, f"response {id_}")
    check(m.get("jsonrpc") == "2.0", f"response {id_} is JSON-RPC 2.0: {m}")
    return m


async def seed_002(port):
    """POST /register, then hello → welcome; returns the instance and its socket."""
    status, reg = register(port, {"userAgent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0.0.0",
                                  "windowId": 123})
    check(status == 200, f"/register answers 200, not {status}")
    check(set(reg) >= {"instanceId", "port", "websocketUrl"}, f"/register fields: {reg}")
    check(re.fullmatch(r"inst_\d+_[a-z0-9]+", reg["instanceId"]) is not None,
          f"instance id shape: {reg['instanceId']}")
    check(reg["port"] == port, f"port {reg['port']} == {port}")
    check(reg["websocketUrl"] == f"ws://localhost:{port}", f"websocketUrl {reg['websocketUrl']}")
    ws = await connect(f"ws://localhost:{reg['port']}")
    await ws.send(json.dumps({"type": "hello", "instanceId": reg["instanceId"]}))
    welcome = await recv_json(ws)
    check(welcome.get("type") == "welcome", f"welcome: {welcome}")
    check(welcome.get("instanceId") == reg["instanceId"], f"welcome names the instance: {welcome}")
    check(isinstance(welcome.get("serverVersion"), str), f"welcome has serverVersion: {welcome}")
    return reg["instanceId"], ws


async def extension_answers(ws, expect_name, reply):
    """The seed-002 extension: the next tool_call must be expect_name; answer with reply(call)."""
    call, _ = await recv_until(ws, lambda m: m.get("type") == "tool_call", "tool_call")
    check(set(call) >= {"type", "id", "name", "args"}, f"tool_call fields: {call}")
    check(call["name"] == expect_name, f"tool_call name {call['name']} == {expect_name}")
    await ws.send(json.dumps(reply(call)))
    return call


async def main(binary):
    tmp = tempfile.mkdtemp(prefix="browser-mcp-py-")
    proc, info = start_daemon(binary, tmp)
    port, token = info["port"], info["token"]
    try:
        # ---- seed 002 ----
        instance, ext = await seed_002(port)

        # ---- seed 003: a browser ----
        base = f"ws://localhost:{port}/ws"
        browser = await connect(f"{base}?sessionId=py-session&clientType=browser&version=1.0.0")
        welcome = await recv_json(browser)
        check(welcome.get("jsonrpc") == "2.0", f"the server's first message is JSON-RPC: {welcome}")
        hello = await request(browser, "1", "hello", {"clientType": "browser", "version": "1.0.0",
                                                      "capabilities": ["dom:read", "dom:interact"]})
        check("result" in hello, f"hello result: {hello}")
        click_tool = {"name": "browser_click", "description": "Click an element",
                      "inputSchema": {"type": "object",
                                      "properties": {"selector": {"type": "string"}},
                                      "required": ["selector"]}}
        reg = await request(browser, "4", "tools/register", {"tools": [click_tool]})
        check("result" in reg, f"tools/register result: {reg}")
        pong = await request(browser, "2", "ping")
        check(pong["result"] == {"pong": True}, f"ping: {pong}")

        # ---- seed 003: an agent ----
        try:
            await connect(f"{base}?sessionId=py-session&clientType=agent")
            check(False, "an agent without the token must be refused")
        except InvalidStatus as e:
            check(e.response.status_code == 401, f"no token → 401, got {e.response.status_code}")
        agent = await connect(f"{base}?sessionId=py-session&clientType=agent",
                              additional_headers={"Authorization": f"Bearer {token}"})
        await recv_json(agent)  # the welcome
        hello = await request(agent, "1", "hello", {"clientType": "agent", "version": "1.0.0"})
        check("result" in hello, f"agent hello: {hello}")
        listed = await request(agent, "5", "tools/list", {})
        names = [t["name"] for t in listed["result"]["tools"]]
        check(names == ["browser_click"], f"tools/list: {names}")

        # The seed's tools/call, forwarded to the browser and back.
        await agent.send(rpc("6", "tools/call", {"name": "browser_click",
                                                  "arguments": {"selector": ".submit-btn"},
                                                  "timeout": 30000}))
        fwd, _ = await recv_until(browser, lambda m: m.get("method") == "tools/call", "tools/call")
        check(fwd["params"]["name"] == "browser_click", f"forwarded: {fwd}")
        check(fwd["params"]["arguments"] == {"selector": ".submit-btn"}, f"forwarded: {fwd}")
        result = {"content": [{"type": "text", "text": "Clicked: .submit-btn"}], "isError": False}
        await browser.send(json.dumps({"jsonrpc": "2.0", "id": fwd["id"], "result": result}))
        answer, _ = await recv_until(agent, lambda m: m.get("id") == "6", "answer 6")
        check(answer == {"jsonrpc": "2.0", "id": "6", "result": result}, f"answer: {answer}")

        # Errors with the seed's codes.
        await agent.send("{not json")
        e = await recv_json(agent)
        check(e["error"]["code"] == -32700 and e["id"] is None, f"parse error: {e}")
        e = await request(agent, "7", "no/such/method", {})
        check(e["error"]["code"] == -32601, f"method not found: {e}")
        e = await request(agent, "8", "tools/call", {"arguments": {}})
        check(e["error"]["code"] == -32602, f"invalid params: {e}")
        await agent.send(json.dumps({"jsonrpc": "1.0", "id": "9", "method": "ping"}))
        e, _ = await recv_until(agent, lambda m: m.get("id") == "9", "answer 9")
        check(e["error"]["code"] == -32600, f"invalid request: {e}")

        # A batch.
        await agent.send(json.dumps([{"jsonrpc": "2.0", "id": "b1", "method": "ping"},
                                     {"jsonrpc": "2.0", "method": "ping"},
                                     {"jsonrpc": "2.0", "id": "b2", "method": "ping"}]))
        batch = await recv_json(agent)
        check(isinstance(batch, list) and sorted(r["id"] for r in batch) == ["b1", "b2"],
              f"batch answer: {batch}")

        # ---- across dialects: the agent joins the seed-002 instance's session ----
        joined = await request(agent, "10", "session/join", {"sessionId": instance})
        check("result" in joined, f"session/join: {joined}")
        await agent.send(rpc("11", "tools/call", {"name": "browser_navigate",
                                                   "arguments": {"action": "goto",
                                                                 "url": "https://example.com"}}))
        call = await extension_answers(ext, "browser_navigate", lambda c: {
            "type": "tool_result", "id": c["id"],
            "result": {"success": True, "url": "https://example.com/", "title": "Example Domain"}})
        check(call["args"] == {"url": "https://example.com"}, f"goto args: {call['args']}")
        answer, _ = await recv_until(agent, lambda m: m.get("id") == "11", "answer 11")
        check(answer.get("result", {}).get("title") == "Example Domain", f"goto answer: {answer}")

        await agent.send(rpc("12", "tools/call", {"name": "browser_navigate",
                                                   "arguments": {"action": "wait",
                                                                 "selector": "#nonexistent"}}))
        call = await extension_answers(ext, "browser_wait_for", lambda c: {
            "type": "tool_error", "id": c["id"],
            "error": {"code": "ELEMENT_NOT_FOUND",
                      "message": "No element matches selector: #nonexistent"}})
        check(call["args"] == {"selector": "#nonexistent"}, f"wait args: {call['args']}")
        answer, _ = await recv_until(agent, lambda m: m.get("id") == "12", "answer 12")
        check(answer.get("error", {}).get("code") in SEED_CODES, f"tool error: {answer}")
        check(answer["error"].get("data", {}).get("retryable") is False,
              f"ELEMENT_NOT_FOUND is not retryable: {answer}")

        # A second hello for a connected instance is refused with a close code.
        dup = await connect(f"ws://localhost:{port}")
        await dup.send(json.dumps({"type": "hello", "instanceId": instance}))
        refusal = await recv_json(dup)
        check(refusal.get("type") == "error", f"duplicate hello refused: {refusal}")
        try:
            await asyncio.wait_for(dup.recv(), 10)
        except Exception:
            pass
        check(dup.close_code is not None and dup.close_code >= 4000,
              f"duplicate hello closed with a private code, got {dup.close_code}")

        for ws in (ext, browser, agent):
            await ws.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        subprocess.run(["rm", "-rf", tmp], check=False)
    print(f"check_dialects.py: ok, {checks} checks passed")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1]))
