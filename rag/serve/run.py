"""Starting `rag serve`: the policy from a config file and the command's flags, checked before anything listens;
the warnings for risky but allowed settings; the model files made before listening; the listening socket; uvicorn.

The socket is bound here, not by uvicorn, so that a port that is taken is one line before any request, and
`--port 0` can say which port it picked. It is made with proto IPPROTO_TCP, which asyncio needs before it sets
TCP_NODELAY on the listening socket; every accepted connection gets TCP_NODELAY from rag.serve.guard.no_delay.
uvicorn runs the guarded h11 protocol (the header timeout), the policy's keep-alive, and no access log of its own
(rag.serve.guard writes JSON access lines).
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Callable, Iterable

from rag.config import RagError
from rag.serve.policy import DEFAULT_WARM, ServePolicy, parse_allow, parse_corpora, read_api_key, read_config_file

LISTEN_BACKLOG = 128
MAX_HEAD_BYTES = 16 * 1024  # h11's limit on an incomplete request head


class CannotBind(RagError):
    """The address or port cannot be bound (taken, or not this machine's)."""


def serve_policy(
    config: Path | None = None,
    allow: Iterable[str] = (),
    corpora: Iterable[str] = (),
    flags: dict | None = None,
    api_key_file: Path | None = None,
    warm: bool = True,
) -> ServePolicy:
    """The policy `rag serve` runs with: the config file's settings, then --allow and --corpus added to its own,
    then every flag that was given (not None) over the file's value; the API key from the file or RAG_API_KEY.
    Checked before serving (ServePolicy.check_start): a RagError names the key at fault in one line."""
    try:
        settings = read_config_file(config) if config else {}
        settings["allow"] = {**settings.get("allow", {}), **parse_allow(list(allow))}
        settings["corpora"] = {**settings.get("corpora", {}), **parse_corpora(list(corpora))}
        settings.update({k: v for k, v in (flags or {}).items() if v is not None})  # a flag given wins over the file
        settings.setdefault("torch_threads", 1)
        policy = ServePolicy(
            **settings,
            api_key=read_api_key(str(api_key_file) if api_key_file else None),
            warm=[DEFAULT_WARM] if warm else [],
        )
        policy.check_start()
    except TypeError as exc:  # a setting ServePolicy does not take, or a value of the wrong type
        raise RagError(str(exc)) from None
    return policy


def start(
    policy: ServePolicy,
    host: str,
    port: int,
    log_level: str = "info",
    *,
    prepare: bool = True,
    warn: Callable[[str], None] = print,
    say: Callable[[str], None] = print,
    listening: Callable[[str], None] = print,
) -> None:
    """Warn about risky settings, make the model files the first request would otherwise make (prepare: the warm-up),
    then listen until stopped (serve_on). warn(line) is told each warning, say(line) how the preparation goes, and
    listening(line) where the server listens once it is bound."""
    for line in policy.start_warnings(host):
        warn(line)
    if prepare:  # the verifier's export (a child process) and load happen now, not inside the first request
        from rag.serve import prepare as models

        models.prepare_models(say=say)
    serve_on(policy, host, port, log_level, listening)


def serve_on(policy: ServePolicy, host: str, port: int, log_level: str, listening: Callable[[str], None]) -> None:
    """Build the app, bind host:port (CannotBind when it cannot), say where it listens, and run uvicorn on it."""
    import uvicorn

    from rag.serve.app import create_app
    from rag.serve.guard import protocol_with_timeout

    api = create_app(policy)
    sock = bind(host, port)
    logging.basicConfig(level=log_level.upper(), format="%(message)s")
    listening(listening_line(policy, host, sock.getsockname()[1]))
    server = uvicorn.Server(
        uvicorn.Config(
            api,
            log_level=log_level,
            access_log=False,
            http=protocol_with_timeout(policy.header_timeout),
            timeout_keep_alive=policy.keep_alive,
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        )
    )
    server.run(sockets=[sock])


def listening_line(policy: ServePolicy, host: str, port: int) -> str:
    return (
        f"rag serve on http://{host}:{port}  (docs at /docs; "
        f"auth {'on' if policy.api_key else 'off'}; builds {'on' if policy.build_missing else 'off'})"
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (0: a free port); CannotBind, naming what to do, when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CannotBind(f"cannot bind {host}:{port} ({exc.strerror}); pick another --port") from None
    sock.listen(LISTEN_BACKLOG)
    sock.set_inheritable(True)
    return sock
