"""A python-socketio server answering the way the A2C-SMCP reference server does.

Used by sioclient's interop tests: it serves the /smcp namespace on 127.0.0.1 (port 0), on
aiohttp (the Python SDK's default setup) or under ASGI with uvicorn, and prints one line of
JSON per thing the test checks on stdout:

  {"listening": PORT}                  once the server accepts connections
  {"connect": {"auth":..., "query":..., "method":...}}  the namespace CONNECT (query and method of
                                       the session's first request)
  {"joined": {"role":..., "name":..., "office_id":...}, "transport": "websocket"|"polling"}
  {"answer": EVENT, "data": ...}       the computer's answer to a client: event the server sent

Like the reference server, server:join_office answers [true, null] or [false, reason], and the
server forwards client: requests to the computer with a call (emit with ack). After a computer
joins, it asks it client:get_tools and client:get_desktop itself, as an agent's request would.

With --sdk-auth the namespace CONNECT is authenticated as the Python SDK's default provider does:
the key from the auth object's "token" only, a refusal raised as ConnectionRefusedError with a
plain message (no flat error); each refusal prints {"refused": {"auth": ...}}.

usage: python3 pysio_server.py aiohttp|asgi [--refuse-version] [--sdk-auth]
"""

import asyncio
import base64
import hashlib
import json
import socket
import sys

import socketio

NS = "/smcp"
mode = sys.argv[1]
refuse_version = "--refuse-version" in sys.argv[2:]
sdk_auth = "--sdk-auth" in sys.argv[2:]


def out(obj):
    print(json.dumps(obj), flush=True)


if mode == "aiohttp":
    sio = socketio.AsyncServer(async_mode="aiohttp", cors_allowed_origins="*")
else:
    sio = socketio.AsyncServer(async_mode="asgi", cors_allowed_origins="*")

sessions = {}


def transport(sid):
    """The Engine.IO transport of a namespace session: "polling" or "websocket"."""
    try:
        return sio.eio.transport(sio.manager.eio_sid_from_sid(sid, NS))
    except Exception as exc:  # the test shows what went wrong
        return "unknown: " + repr(exc)


@sio.on("connect", namespace=NS)
async def connect(sid, environ, auth=None):
    if sdk_auth:
        # The SDK's default provider: auth.token, nothing else.
        if not isinstance(auth, dict) or auth.get("token") != "py-key":
            out({"refused": {"auth": auth}})
            raise socketio.exceptions.ConnectionRefusedError("Invalid connection request")
    else:
        # The reference server reads the key from the header or the auth object.
        key = environ.get("HTTP_X_API_KEY") or (auth or {}).get("api_key")
        if key != "py-key":
            raise socketio.exceptions.ConnectionRefusedError({"code": 401, "message": "invalid API key"})
    # environ is the session's first request: what the client opened with.
    out({"connect": {"auth": auth, "query": environ.get("QUERY_STRING", ""), "method": environ.get("REQUEST_METHOD", "")}})


@sio.on("server:join_office", namespace=NS)
async def join_office(sid, data):
    if data.get("role") not in ("agent", "computer"):
        return False, "bad role"
    sessions[sid] = data
    sio.enter_room(sid, data["office_id"], namespace=NS)
    out({"joined": data, "transport": transport(sid)})
    if data["role"] == "computer":
        asyncio.get_running_loop().create_task(ask(sid, data))
    return True, None


async def ask(sid, data):
    for event, payload in (
        ("client:get_tools", {"agent": "py-agent", "req_id": "r1", "computer": data["name"]}),
        ("client:get_desktop", {"agent": "py-agent", "req_id": "r2", "computer": data["name"]}),
    ):
        try:
            answer = await sio.call(event, payload, to=sid, namespace=NS, timeout=10)
        except Exception as exc:  # the test reads the failure
            answer = {"error": repr(exc)}
        out({"answer": event, "data": answer, "transport": transport(sid)})
    if sdk_auth:
        await ask_more(sid, data)


async def ask_more(sid, data):
    """As an agent of the SDK would go on: a tool call, a skill, its file drained as a blob."""
    base = {"agent": "py-agent", "computer": data["name"]}

    async def call(event, req_id, **fields):
        try:
            return await sio.call(event, dict(base, req_id=req_id, **fields), to=sid, namespace=NS, timeout=10)
        except Exception as exc:  # the test reads the failure
            return {"error": repr(exc)}

    tools = await call("client:get_tools", "r3")
    names = [t.get("name", "") for t in tools.get("tools") or []]
    name = next((n for n in names if n.endswith("__echo")), "")
    answer = await call("client:tool_call", "r4", tool_name=name, params={"text": "hi"}, timeout=10)
    out({"answer": "client:tool_call", "data": answer})
    answer = await call("client:get_skill", "r5", name="report", rel_path="big.md")
    out({"answer": "client:get_skill", "data": answer})
    handle, got, n = answer.get("blob_handle"), bytearray(), 0
    while handle:
        n += 1
        chunk = await call("client:get_blob", "r6-%d" % n, blob_handle=handle, chunk_offset=len(got))
        if "blob" not in chunk or n > 1000:
            out({"drained": {"error": chunk}})
            return
        got += base64.b64decode(chunk["blob"])
        if chunk.get("eof"):
            out({"drained": {"size": len(got), "sha256": hashlib.sha256(got).hexdigest(), "said": chunk.get("sha256")}})
            return


@sio.on("server:leave_office", namespace=NS)
async def leave_office(sid, data):
    sessions.pop(sid, None)
    sio.leave_room(sid, data.get("office_id"), namespace=NS)
    return True, None


for name in ("update_config", "update_tool_list", "update_desktop", "update_finder"):
    def make(name):
        async def handler(sid, data):
            office = sessions.get(sid, {}).get("office_id")
            if office:
                await sio.emit("notify:" + name, data, room=office, skip_sid=sid, namespace=NS)
        return handler
    sio.on("server:" + name, make(name), namespace=NS)


def version_refused(query):
    return refuse_version and "a2c_version" in query


async def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # Listening before "listening" is printed: uvicorn would listen only
    # once serving, and the client's first dial was refused.
    sock.listen(128)
    if mode == "aiohttp":
        from aiohttp import web

        @web.middleware
        async def version(request, handler):
            if version_refused(request.query_string):
                return web.json_response(
                    {"code": 4008, "message": "incompatible protocol version", "server_version": "0.3.0"},
                    status=400, headers={"X-A2C-Error-Code": "4008"})
            return await handler(request)

        app = web.Application(middlewares=[version])
        sio.attach(app)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.SockSite(runner, sock)
        await site.start()
        out({"listening": port})
        await asyncio.Event().wait()
    else:
        import uvicorn

        inner = socketio.ASGIApp(sio)

        async def app(scope, receive, send):
            if scope["type"] in ("http", "websocket") and version_refused(scope.get("query_string", b"").decode()):
                body = json.dumps({"code": 4008, "message": "incompatible protocol version"}).encode()
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"application/json"), (b"x-a2c-error-code", b"4008")]})
                await send({"type": "http.response.body", "body": body})
                return
            await inner(scope, receive, send)

        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        out({"listening": port})
        await server.serve(sockets=[sock])


asyncio.run(main())
