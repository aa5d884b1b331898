"""What stands between a connection and the endpoints: body limits and text checks, the API key, access logs and
metrics (pure ASGI middleware), and an HTTP protocol that closes connections that never finish their headers."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import socket
import time

from uvicorn.protocols.http.h11_impl import H11Protocol

OPEN_PATHS = ("/health", "/", "/favicon.ico", "/docs")  # answered without the API key (probes; the page; /docs)
OPEN_PREFIXES = ("/static/",)  # the demo page's files (its API calls send the key)
access_log = logging.getLogger("rag.access")


async def send_json(send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


MAX_JSON_DEPTH = 32  # request bodies are flat objects; 1,000 levels once reached a RecursionError (a 500)


def json_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, brackets inside strings not counted (linear, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def text_problem(body: bytes) -> str | None:
    """Why a JSON body cannot be taken as text (invalid UTF-8, a lone surrogate), or None."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the request body is not valid UTF-8 (bad byte at offset {exc.start}); send UTF-8 encoded JSON"
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and json_depth(text) > MAX_JSON_DEPTH:
        return f"the request JSON is nested more than {MAX_JSON_DEPTH} levels deep; send a flat object"
    try:
        data = json.loads(text)
    except ValueError:
        return None  # the endpoint's own parser reports invalid JSON (422)
    except RecursionError:  # a depth json_depth did not see (it counts brackets outside strings)
        return "the request JSON is nested too deeply; send a flat object"
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (
                    f"the request contains a lone surrogate ({item[exc.start]!a}), which is not text; "
                    "send UTF-8 text (pair surrogates in \\u escapes)"
                )
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


class BodyGuard:
    """Refuse bodies over max_body bytes (413, before reading them whole), bodies not whole within body_timeout
    seconds of the head (408: a client trickling a byte a second, or sending nothing, holds no connection) and
    bodies that are not text (400); pass the checked body on to the app."""

    def __init__(self, app, max_body: int, body_timeout: float = 30.0):
        self.app, self.max_body, self.body_timeout = app, max_body, body_timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        too_big = f"the request body is over the {self.max_body:,}-byte limit"
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            return await send_json(send, 413, too_big, [(b"connection", b"close")])
        chunks, size = [], 0
        try:
            async with asyncio.timeout(self.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return
                    chunks.append(message.get("body", b""))
                    size += len(chunks[-1])
                    if size > self.max_body:
                        return await send_json(send, 413, too_big, [(b"connection", b"close")])
                    if not message.get("more_body"):
                        break
        except TimeoutError:
            slow = f"the request body did not arrive within {self.body_timeout:g} s; send it whole and at once"
            return await send_json(send, 408, slow, [(b"connection", b"close")])
        body = b"".join(chunks)
        problem = text_problem(body) if body else None
        if problem:
            return await send_json(send, 400, problem)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def key_ok(headers, key: bytes) -> bool:
    """Whether the ASGI headers carry `Authorization: Bearer <key>` (compared in constant time); True with no key."""
    if not key:
        return True
    header = dict(headers).get(b"authorization", b"")
    scheme, _, token = header.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), key)


class ApiKey:
    """Every path but /health needs `Authorization: Bearer <key>`; the key is compared in constant time."""

    def __init__(self, app, key: str | None):
        self.app, self.key = app, (key or "").encode()

    async def __call__(self, scope, receive, send):
        if (
            scope["type"] != "http"
            or not self.key
            or scope["path"] in OPEN_PATHS
            or scope["method"] == "OPTIONS"
            or scope["path"].startswith(OPEN_PREFIXES)
        ):
            return await self.app(scope, receive, send)
        if key_ok(scope["headers"], self.key):
            return await self.app(scope, receive, send)
        detail = "missing or wrong API key; send the header 'Authorization: Bearer <key>'"
        await send_json(send, 401, detail, [(b"www-authenticate", b'Bearer realm="rag"')])


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
UNMATCHED = "unmatched"  # the one label of every path that no route serves, so labels stay a bounded set


def route_label(routes, scope) -> str:
    """The route template that serves this request's path ('/v1/models', '/docs/assets'), or UNMATCHED. Found by
    matching the path, so a request the key or the host check refused before routing is labelled the same way."""
    from starlette.routing import Match

    for route in routes:
        try:
            match, _ = route.matches({**scope, "type": "http"})
        except Exception:  # a path no route can parse (bad percent-encoding): unmatched
            return UNMATCHED
        if match is not Match.NONE:
            return getattr(route, "path", None) or UNMATCHED
    return UNMATCHED


class Observe:
    """One structured (JSON) access-log line and the Prometheus request metrics per request. Metric labels come
    from bounded sets only: the route template (or 'unmatched'), a known method (or 'other') and the status."""

    def __init__(self, app, metrics, routes=()):
        self.app, self.metrics, self.routes = app, metrics, routes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0, status = time.perf_counter(), [500]

        async def watch(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            seconds = time.perf_counter() - t0
            route = getattr(scope.get("route"), "path", None) or route_label(self.routes, scope)
            method = scope["method"] if scope["method"] in METHODS else "other"
            self.metrics.observe(method, route, status[0], seconds)
            client = scope.get("client") or ("-", 0)
            access_log.info(
                json.dumps(
                    {
                        "ts": round(time.time(), 3),
                        "client": client[0],
                        "method": scope["method"],
                        "path": scope["path"],
                        "status": status[0],
                        "ms": round(seconds * 1e3, 1),
                    }
                )
            )


def no_delay(transport) -> None:
    """TCP_NODELAY on an accepted connection. asyncio sets it only on sockets made with proto IPPROTO_TCP, and a
    socket bound by socket.socket() has proto 0: without it a keep-alive response written in two parts (head, then
    body) waited for the client's delayed ACK, about 40 ms per request."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # the connection is already gone
            pass


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a header timeout: a connection that has not sent a whole request head within
    HEADER_TIMEOUT seconds of connecting (or of its last response) is closed. uvicorn's keep-alive timer is
    cancelled by any byte received, so without this a client trickling header bytes holds a connection forever."""

    header_timeout = 10.0

    def connection_made(self, transport) -> None:
        no_delay(transport)
        super().connection_made(transport)
        self.arm_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.arm_header_timer()

    def arm_header_timer(self) -> None:
        cycle = self.cycle

        def expire():
            if self.cycle is cycle and not self.transport.is_closing():
                self.transport.close()

        self.loop.call_later(self.header_timeout, expire)


def protocol_with_timeout(seconds: float) -> type:
    return type("GuardedH11", (GuardedH11Protocol,), {"header_timeout": seconds})
