"""What the operator lets clients ask for: the allowlist, auth, hosts, limits (`rag serve` options or a TOML file).

Nothing expensive happens because a client asked: building missing indexes is off unless the operator turns it
on, every retrieval field is checked against an allowlist (403 lists the allowed values), and `llm` allows only
the extractive backend unless the operator names others.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rag.agent.settings import DEFAULT_AGENT
from rag.answer.llm import LLM_BACKENDS
from rag.config import REPO_DIR, RagError, cache_dir, check_dirs, data_dir, index_dir
from rag.data.corpus import NAMED_CORPORA
from rag.encoders import ENCODER_BACKENDS, ENCODER_NAMES, check_backend, encoder_spec
from rag.index.kinds import INDEX_KINDS
from rag.reduce import REDUCERS
from rag.retrieve import RETRIEVERS, RetrievalSettings

ALLOW_FIELDS = ("corpus", "encoder", "dim", "index", "reduce", "retriever", "llm", "backend")
LOCAL_HOSTS = ["localhost", "127.0.0.1", "::1", "[::1]"]
DEFAULT_WARM = {"corpus": "builtin", "encoder": "minilm", "index": "flat", "retriever": "hybrid"}
DEFAULT_LLMS = [DEFAULT_AGENT.llm]  # 'local' loads a 135M model, 'openai' spends the operator's key: opt-in only


class Forbidden(RagError):
    """A request for something the operator did not allow (HTTP 403)."""


class Busy(RagError):
    """The server will not start more work of this kind now (HTTP 503, retry later)."""


class ServeSettings(BaseModel):
    """The one typed model of every operator setting, for the TOML file, the `rag serve` flags and create_app():
    strict types (the string "false" is not a boolean, 1e400 is not an integer), ranges, no unknown keys."""

    model_config = ConfigDict(strict=True, extra="forbid")

    allow: dict[str, list[str | int]] = {}  # numbers for dim; stored as strings
    corpora: dict[str, str] = {}
    encoders: list[str] | dict[str, str] = []
    build_missing: bool = False
    api_key: str | None = None
    allowed_hosts: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] = list(LOCAL_HOSTS)
    cors_origins: list[str] = []
    max_body: Annotated[int, Field(ge=1024, le=64 * 2**20)] = 64 * 1024
    max_open: Annotated[int, Field(ge=1, le=1000)] = 8
    max_memory_mb: Annotated[int, Field(ge=1, le=2**24)] = 4096
    max_builds: Annotated[int, Field(ge=1, le=64)] = 1
    max_inflight: Annotated[int, Field(ge=0, le=100_000)] | None = None  # None: default_inflight()
    max_queued: Annotated[int, Field(ge=0, le=100_000)] | None = None  # None: default_queued(max_inflight)
    header_timeout: Annotated[float, Field(gt=0, le=600)] = 10.0
    request_timeout: Annotated[float, Field(gt=0, le=3600)] = 300.0
    body_timeout: Annotated[float, Field(gt=0, le=3600)] = 30.0
    keep_alive: Annotated[float, Field(gt=0, le=600)] = 5.0
    torch_threads: Annotated[int, Field(ge=0, le=1024)] = 0
    watch: bool = False  # update served folder corpora in the background when their files change (rag.serve.watch)
    warm: list[dict] = []

    @field_validator("allow")
    @classmethod
    def allow_lists_serve_something(cls, allow: dict[str, list]) -> dict[str, list]:
        """No empty list (it would serve nothing), widths that are positive integers, names from each vocabulary."""
        vocabularies = {
            "index": INDEX_KINDS,
            "reduce": REDUCERS,
            "retriever": RETRIEVERS,
            "llm": LLM_BACKENDS,
            "backend": ENCODER_BACKENDS,
        }
        for name, values in allow.items():
            if not values:
                raise ValueError(f"allow.{name}: an empty list serves nothing; leave {name} out to allow every value")
            if name == "dim":
                bad = [v for v in values if not re.fullmatch(r"[1-9][0-9]{0,4}", str(v))]
                if bad:
                    raise ValueError(f"allow.dim: {bad[0]!r:.40} is not a width; write positive integers, e.g. 128,384")
            elif name in vocabularies:
                bad = [v for v in values if str(v) not in vocabularies[name]]
                if bad:
                    raise ValueError(
                        f"allow.{name}: unknown value {bad[0]!r:.40}; valid values: {', '.join(vocabularies[name])}"
                    )
        return allow


def check_settings(values: dict, where: str = "serve setting") -> dict:
    """The values checked against ServeSettings (only the keys given), or RagError naming the first bad key in
    one line: "serve.toml: max_body: Input should be a valid integer (got '100')"."""
    try:
        ServeSettings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "value_error" and message.startswith(str(first["loc"][0]) + "."):
            raise RagError(f"{where}: {message}") from None  # a validator's message names its key already
        tags = ("str", "int", "float", "bool", "dict", "list")  # the branch names pydantic puts in a union's loc
        key = ".".join(str(p) for p in first["loc"] if not (isinstance(p, str) and ("[" in p or p in tags)))
        unknown = sorted(str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden")
        if unknown:
            known = ", ".join(sorted(f for f in ServeSettings.model_fields if f not in ("api_key", "warm")))
            raise RagError(f"{where}: unknown settings {unknown}; known: {known}") from None
        got = repr(first.get("input"))
        got = got if len(got) <= 60 else got[:57] + "..."
        raise RagError(f"{where}: {key}: {first['msg']} (got {got})") from None
    return values


def default_inflight() -> int:
    """/search and /ask requests computing at once by default: two per CPU core, within 2..32. Past the cores more
    threads add memory (each run holds its model activations and buffers), not throughput."""
    return max(2, min(32, 2 * (os.cpu_count() or 1)))


def default_queued(inflight: int) -> int:
    """Requests waiting for a computing slot by default (a waiting request holds its body and no thread): 16 per
    slot, at least 64. Past them the server answers 503 with Retry-After."""
    return max(64, 16 * inflight)


@dataclass
class ServePolicy:
    """Every operator setting of `rag serve`. Empty allow lists mean: the field's whole vocabulary (dim: any)."""

    allow: dict[str, list[str]] = field(default_factory=dict)
    corpora: dict[str, str] = field(default_factory=dict)  # served name -> folder path (never shown to clients)
    encoders: list[str] | dict[str, str] = field(default_factory=list)  # extra encoders: [NAME=]lm:<checkpoint dir>
    build_missing: bool = False
    api_key: str | None = None
    allowed_hosts: list[str] = field(default_factory=lambda: list(LOCAL_HOSTS))
    cors_origins: list[str] = field(default_factory=list)
    max_body: int = 64 * 1024
    max_open: int = 8
    max_memory_mb: int = 4096
    max_builds: int = 1
    max_inflight: int | None = None  # /search and /ask computing at once (0: no limit); None: default_inflight()
    max_queued: int | None = None  # more waiting for a slot, past them 503; None: default_queued(max_inflight)
    header_timeout: float = 10.0
    request_timeout: float = 300.0  # seconds a /search or whole /ask may compute before the client gets 504
    body_timeout: float = 30.0  # seconds from the end of the head to the end of the body (slow bodies get 408)
    keep_alive: float = 5.0
    torch_threads: int = 0
    warm: list[dict] = field(default_factory=list)
    watch: bool = False  # update served folder corpora in the background when their files change (rag.serve.watch)

    def __post_init__(self):
        check_settings({f.name: getattr(self, f.name) for f in fields(self)})
        if self.max_inflight is None:
            self.max_inflight = default_inflight()
        if self.max_queued is None:
            self.max_queued = default_queued(self.max_inflight)
        for name, values in self.allow.items():
            if name not in ALLOW_FIELDS:
                raise RagError(f"--allow {name}=...: unknown field; allowed fields: {', '.join(ALLOW_FIELDS)}")
            self.allow[name] = [str(v) for v in values]
        if isinstance(self.encoders, list):  # served name -> encoder; an lm:<dir> is served by its folder's name
            pairs = [e.partition("=")[::2] if "=" in e.split(":")[0] else ("", e) for e in self.encoders]
            self.encoders = {
                name or ("lm-" + real.rstrip("/").rpartition("/")[2] if "/" in real else real): real
                for name, real in pairs
            }
        for name in self.corpora:
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name) or name in NAMED_CORPORA:
                raise RagError(
                    f"corpus name '{name}' must be 1-64 letters, digits, '_', '.' or '-' and not a named corpus"
                )

    # ------------------------------------------------------------ checked once, before serving
    def check_start(self) -> None:
        """What must hold before the server listens, else RagError naming the key in one line: every served
        corpus is a folder, every extra encoder a known one (an lm:<dir> a checkpoint folder), the index and cache
        folders are folders, RAG_INDEX_KEY is long enough."""
        from rag.encoders.tables import lm_checkpoint_files
        from rag.index.versions import index_key

        for name, path in self.corpora.items():
            if not Path(path).expanduser().is_dir():
                raise RagError(f"corpora.{name}: {path} is not a folder; give an existing corpus folder")
        for name, real in self.encoders.items():
            try:
                encoder_spec(real)
            except RagError as exc:
                raise RagError(f"encoders.{name}: {exc}") from None
            if real.startswith("lm:"):
                run = Path(real[3:].removesuffix("#idf")).expanduser()
                weights, tokenizer = lm_checkpoint_files(run)
                if not (weights.is_file() and tokenizer.is_file()):
                    raise RagError(
                        f"encoders.{name}: {run} is not an LM checkpoint (it needs tokenizer.json and "
                        "model.safetensors); give a `rag lm train --out` folder"
                    )
        check_dirs()
        index_key()  # RagError when RAG_INDEX_KEY is set but too short

    def start_warnings(self, host: str) -> list[str]:
        """One line per risky but allowed setting, printed when the server starts."""
        out = []
        if host not in ("127.0.0.1", "localhost", "::1") and not self.api_key:
            out.append(
                f"binding {host} exposes the service beyond this machine without an API key; "
                "set RAG_API_KEY or --api-key-file"
            )
        if "*" in self.allowed_hosts and "*" in self.cors_origins and not self.api_key:
            out.append(
                "allowed hosts '*' and CORS origin '*' without an API key: any web page a local user opens can "
                "query this server; set RAG_API_KEY or name the hosts and origins"
            )
        return out

    # ------------------------------------------------------------ what may be asked for
    def allowed(self, name: str) -> list[str] | None:
        """The values a request may use for a field; None = any (only dim: the encoder checks the range)."""
        if name in self.allow:
            return self.allow[name]
        if name == "backend":
            return []  # none beyond each encoder's default query backend (another one may export or load a model)
        return {
            "corpus": list(NAMED_CORPORA) + list(self.corpora),
            "encoder": list(ENCODER_NAMES) + [e for e in self.encoders if e not in ENCODER_NAMES],  # served names
            "dim": None,
            "index": list(INDEX_KINDS),
            "reduce": list(REDUCERS),
            "retriever": list(RETRIEVERS),
            "llm": DEFAULT_LLMS,
        }[name]

    def check(self, name: str, value) -> None:
        allowed = self.allowed(name)
        if allowed is not None and str(value) not in allowed:
            raise Forbidden(f"{name} '{value}' is not served here; allowed {name} values: {', '.join(allowed)}")

    def check_request(self, settings: RetrievalSettings, llm: str | None = None) -> RetrievalSettings:
        """The validated settings with the corpus name mapped to its folder, or Forbidden naming the allowed values."""
        self.check("corpus", settings.corpus)
        self.check("encoder", settings.encoder)
        self.check("retriever", settings.retriever)
        if settings.kind.dense:
            self.check("index", settings.index)
            self.check("reduce", settings.reduce)
        if llm is not None:
            self.check("llm", llm)
        if settings.backend is not None:
            self.check_encoder_backend(self.encoders.get(settings.encoder, settings.encoder), settings.backend)
        real = RetrievalSettings(
            **{
                **settings.as_dict(),
                "corpus": self.corpus_path(settings.corpus),
                "encoder": self.encoders.get(settings.encoder, settings.encoder),
            }
        ).validated()
        if real.kind.dense:
            self.check("dim", real.dim)
        return real

    def check_encoder_backend(self, encoder: str, backend: str) -> None:
        """A backend named in a request: the encoder's default query backend, or one the operator allowed."""
        default = check_backend(encoder, None, queries=True)
        allowed = self.allowed("backend")
        if backend != default and backend not in allowed:
            raise Forbidden(
                f"backend '{backend}' is not served here; allowed backend values: {', '.join([default, *allowed])} "
                "(the operator may allow more with --allow backend=...)"
            )

    def corpus_path(self, name: str) -> str:
        return self.corpora.get(name, name)

    def served_name(self, corpus: str) -> str:
        """The name clients know a corpus by (a folder corpus's served name, never its path)."""
        for name, path in self.corpora.items():
            if corpus == path:
                return name
        return corpus

    def served_encoder(self, encoder: str | None) -> str | None:
        """The name clients know an encoder by (an lm:<dir> encoder's served name, never its path)."""
        return next((name for name, real in self.encoders.items() if real == encoder), encoder)

    def public(self) -> dict:
        """What GET /config shows: the allowed values of every field (for pickers), and the limits."""
        return {
            "allow": {name: self.allowed(name) for name in ALLOW_FIELDS},
            "defaults": {**RetrievalSettings().as_dict(), "llm": DEFAULT_AGENT.llm},
            "build_missing": self.build_missing,
            "auth": bool(self.api_key),
            "max_body": self.max_body,
            "max_open": self.max_open,
            "max_memory_mb": self.max_memory_mb,
            "max_inflight": self.max_inflight,
            "max_queued": self.max_queued,
        }


# ---------------------------------------------------------------- reading the operator's settings


def parse_allow(items: list[str]) -> dict[str, list[str]]:
    """['corpus=builtin,scifact', 'dim=128,384'] -> {'corpus': [...], 'dim': [...]} (repeats add values)."""
    out: dict[str, list[str]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not values.strip():
            raise RagError(f"--allow '{item}': write FIELD=VALUE[,VALUE...], e.g. --allow corpus=builtin,scifact")
        out.setdefault(name, []).extend(v.strip() for v in values.split(",") if v.strip())
    return out


def parse_corpora(items: list[str]) -> dict[str, str]:
    """['notes=/srv/notes', '/srv/docs'] -> {'notes': '/srv/notes', 'docs': '/srv/docs'} (name defaults to the folder's)."""
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = Path(item).name, item
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise RagError(f"--corpus {item}: {path} is not a folder")
        out[name] = str(folder.resolve())
    return out


def read_config_file(path: str | Path) -> dict:
    """A TOML file with the same settings as the flags: [allow] corpus = [...] and top-level keys such as
    build_missing = true, max_open = 4, allowed_hosts = [...], corpora = {notes = "/srv/notes"}."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise RagError(
            f"cannot read the serve config {path}: it is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RagError(f"cannot read the serve config {path}: {exc}") from None
    for secret in ("api_key", "warm"):  # the key comes from a file or the environment, warm-up from --warm
        if secret in data:
            raise RagError(f"{path}: '{secret}' cannot be set in the config file; known settings: see rag serve --help")
    allow = data.get("allow", {})
    if not isinstance(allow, dict):
        raise RagError(f"{path}: allow: write it as a table, [allow] corpus = [...] (got {allow!r:.60})")
    for name, values in allow.items():
        for value in values if isinstance(values, list) else [values]:
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise RagError(f"{path}: allow.{name}: values are names or numbers (got {value!r:.60})")
    data["allow"] = {k: [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in allow.items()}
    return check_settings(data, str(path))


def read_api_key(key_file: str | None) -> str | None:
    """The API key from --api-key-file or RAG_API_KEY; None = no authentication (neither given).

    The key file holds the key alone on one line (a trailing newline is fine); a file with more lines is refused,
    as is an empty file or a blank RAG_API_KEY: none of them turns authentication off."""
    if key_file:
        try:
            text = Path(key_file).read_bytes().decode("utf-8")
        except OSError as exc:
            raise RagError(f"cannot read --api-key-file {key_file}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise RagError(f"--api-key-file {key_file} is not UTF-8 text; write the key alone on one line") from None
        key, where = text.strip(), f"--api-key-file {key_file}"
        if len(key.splitlines()) > 1:
            raise RagError(
                f"{where} holds {len(key.splitlines())} lines; write the key alone on one line "
                "(only a trailing newline may follow it)"
            )
    elif "RAG_API_KEY" in os.environ:
        key, where = os.environ["RAG_API_KEY"].strip(), "RAG_API_KEY"
        if "\n" in key or "\r" in key:
            raise RagError("RAG_API_KEY holds more than one line; set it to the key alone")
    else:
        return None
    if not key:
        raise RagError(
            f"{where} is empty or blank, which would turn authentication off; give a long random key "
            "(e.g. `openssl rand -hex 32`), or unset RAG_API_KEY to serve without one"
        )
    if len(key) < 16:
        raise RagError(
            f"the API key ({where}) is shorter than 16 characters; use a long random one (e.g. `openssl rand -hex 32`)"
        )
    return key


# ---------------------------------------------------------------- no paths in what clients see

_PATH = re.compile(r"(?<![\w/.<>~])(?:~|/)(?:[^\s'\",;:()\[\]<>/]+/)+[^\s'\",;:()\[\]<>]*")


def hide_paths(message: str) -> str:
    """The message with server paths replaced by short names: <index dir>, <data dir>, <cache dir>, <repo>, <path>."""
    for root, label in (
        (index_dir(), "<index dir>"),
        (data_dir(), "<data dir>"),
        (cache_dir(), "<cache dir>"),
        (REPO_DIR, "<repo>"),
    ):
        message = message.replace(str(root), label)
    return _PATH.sub(lambda m: "<path>/" + m.group(0).rstrip("/").rpartition("/")[2], message)
