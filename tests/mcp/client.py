"""Drives `hookbox mcp` with the official Python MCP SDK, as an MCP client
would: `client.py SCENARIO ARG -- PROXY COMMAND...`. Prints one JSON
object: what the client saw. The Rust tests (host/cli/tests/mcp.rs) start
it and check what it printed, and what the server did.
"""

import contextlib
import json
import sys

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError


def shown(result):
    """A tool result as the client sees it."""
    return {
        "is_error": bool(result.is_error),
        "text": "\n".join(c.text for c in result.content if getattr(c, "text", None) is not None),
        "structured": result.structured_content,
    }


async def call(session, name, arguments, **kw):
    try:
        return shown(await session.call_tool(name, arguments, **kw))
    except MCPError as e:
        return {"error": e.error.message, "code": e.error.code}


def target(command):
    """What the SDK's `Client` connects to: a URL, or a command to start."""
    if len(command) == 1 and command[0].startswith("http"):
        return command[0]
    return StdioServerParameters(command=command[0], args=command[1:])


def connect(command):
    """A server command line, or the URL of one serving streamable HTTP."""
    if len(command) == 1 and command[0].startswith("http"):
        return http(command[0])
    return stdio_client(StdioServerParameters(command=command[0], args=command[1:]))


@contextlib.asynccontextmanager
async def http(url):
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as streams:
        yield streams[0], streams[1]


async def filesystem(root, command):
    """The filesystem server: each flow of the stack on real files."""
    out = {}
    async with connect(command) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        out["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
        out["read"] = await call(s, "read_text_file", {"path": f"{root}/secret.txt"})
        out["write_denied"] = await call(s, "edit_file", {"path": f"{root}/n0.txt", "edits": [{"oldText": "note", "newText": "EDITED"}]})
        out["jailed"] = await call(s, "create_directory", {"path": "/jailed-dir"})
        out["jailed_write"] = await call(s, "write_file", {"path": "/jailed-dir/written.txt", "content": "inside"})
        out["escaped"] = await call(s, "move_file", {"source": f"{root}/a.txt", "destination": f"{root}/\u002e\u002e/out.txt"})
        out["hidden"] = await call(s, "directory_tree", {"path": root})
        results = await asyncio_gather(
            [call(s, "read_text_file", {"path": f"{root}/n{i}.txt"}) for i in range(20)]
        )
        out["concurrent"] = [r.get("text") for r in results]
        out["terminate"] = await call(s, "puppet:flow:terminate:stop here", {})
        out["after_terminate"] = await call(s, "read_text_file", {"path": f"{root}/n0.txt"})
    return out


async def asyncio_gather(coroutines):
    results = [None] * len(coroutines)

    async def one(i, c):
        results[i] = await c

    async with anyio.create_task_group() as tg:
        for i, c in enumerate(coroutines):
            tg.start_soon(one, i, c)
    return results


async def everything(_, command):
    """The everything server: what is not a tool call passes through, and
    progress, sampling, cancellation and pings still work."""
    out = {"progress": [], "sampled": []}

    async def sampling(ctx, params):
        from mcp import types
        out["sampled"].append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled answer"), model="stub"
        )

    async def progress(done, total, message):
        out["progress"].append(done)

    async with connect(command) as (r, w), ClientSession(r, w, sampling_callback=sampling) as s:
        init = await s.initialize()
        out["server"] = init.server_info.name
        out["echo"] = await call(s, "echo", {"message": "hello \u002d there"})
        out["structured"] = await call(s, "get-structured-content", {"location": "New York"})
        out["long"] = await call(s, "trigger-long-running-operation", {"duration": 1, "steps": 4}, progress_callback=progress)
        out["sampling"] = await call(s, "trigger-sampling-request", {"prompt": "hi there", "maxTokens": 5})
        with anyio.move_on_after(0.5) as scope:
            await s.call_tool("trigger-long-running-operation", {"duration": 5, "steps": 5})
        out["cancelled"] = scope.cancelled_caught
        out["after_cancel"] = await call(s, "echo", {"message": "still here"})
        await s.send_ping()
        out["pinged"] = True
        out["resources"] = len((await s.list_resources()).resources)
        out["prompts"] = sorted(p.name for p in (await s.list_prompts()).prompts)
    return out


async def loop(_, command):
    """A guest that loops: the call fails closed, and so does every later
    call of the session."""
    async with connect(command) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        first = await call(s, "puppet:loop", {})
        later = await call(s, "echo", {"message": "after"})
        return {"first": first, "later": later}


async def echo(_, command):
    """One plain call, for a second session and for a session across a
    reload."""
    async with connect(command) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        first = await call(s, "echo", {"message": "one"})
        # The test changes the plugin directory now.
        print(json.dumps({"ready": True}), flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        second = await call(s, "echo", {"message": "two"})
        return {"first": first, "second": second}


async def crash(_, command):
    """A server that dies in the middle of a call."""
    async with connect(command) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        with anyio.move_on_after(20):
            return {"call": await call(s, "die", {})}
        return {"call": "hung"}


async def eras(mode, command):
    """The SDK's `Client` as an application uses it, in `mode` ("auto", its
    default, probes `server/discover` and falls back to `initialize`; a
    version pins it), against a server of both eras: an allowed call, and a
    denied one, which the proxy answers itself."""
    from mcp import Client

    async with Client(target(command), mode=mode) as client:
        out = {"protocol_version": client.protocol_version}
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        out["denied"] = await call(client, "get_current_time", {"timezone": "UTC"})
        out["allowed"] = await call(
            client, "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
    return out


async def old_server(mode, command):
    """The SDK's `Client` in `mode` in front of a server with the tools
    `echo` and `remove` from another era: tests/mcp/rmcp-server, which takes
    only the initialize handshake and exits on any other first request (the
    proxy must not send it `server/discover`), or tests/mcp/new_server.mjs,
    which takes 2026-07-28 alone."""
    from mcp import Client

    async with Client(target(command), mode=mode) as client:
        out = {"protocol_version": client.protocol_version}
        info = client.server_info
        out["server"] = info.name if info else None
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        out["denied"] = await call(client, "remove", {"path": "/etc/passwd"})
        out["allowed"] = await call(client, "echo", {"text": "hi"})
        out["again"] = await call(client, "echo", {"text": "still here"})
    return out


async def ask(code, command):
    """The SDK's `Client` on 2026-07-28 calling a tool that asks the user
    (tests/mcp/ask_server.py): the elicitation is answered with `code`."""
    from mcp import Client

    async def answer(ctx, params):
        return types.ElicitResult(action="accept", content={"code": code})

    server = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(server, mode="2026-07-28", elicitation_callback=answer) as client:
        return {"deploy": await call(client, "deploy", {"target": "prod"})}


async def docs(_, command):
    """What a client reads besides tools: a resource and a prompt, each as
    the text the client gets, or the error it gets instead."""
    out = {}
    async with connect(command) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        try:
            read = await s.read_resource("config://deploy")
            out["resource"] = "\n".join(getattr(c, "text", "") for c in read.contents)
        except MCPError as e:
            out["resource_error"] = e.error.message
        try:
            prompt = await s.get_prompt("deploy", {"target": "prod"})
            out["prompt"] = "\n".join(getattr(m.content, "text", "") for m in prompt.messages)
        except MCPError as e:
            out["prompt_error"] = e.error.message
    return out


SCENARIOS = {f.__name__: f for f in [filesystem, everything, loop, echo, crash, eras, old_server, ask, docs]}


def main():
    scenario, arg, sep, *command = sys.argv[1:]
    assert sep == "--", "usage: client.py SCENARIO ARG -- COMMAND..."
    out = anyio.run(SCENARIOS[scenario], arg, command)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
