"""Shared plumbing of the provider doubles: shape checking, the token count, scripts, HTTP.

Nothing here knows windowkeeper: the doubles judge its output, so they must not share its
code or its assumptions. Each double (``anthropic_api``, ``openai_api``) adds its provider's
rules on top of four things defined here:

- ``check_shape``: validates a JSON value against the request types of the provider's own SDK
  (``TypedDict`` params and pydantic models), read by introspection, so "which fields exist" is
  whatever the installed SDK says, not a list kept by hand;
- ``TokenCount``: the doubles' own, deliberately simple, token count (see its docstring);
- ``Reply``, ``ToolCall`` and ``CodingAgent``: what a script says and a ready-made script;
- ``ApiDouble``: a ``ThreadingHTTPServer`` on 127.0.0.1 that records every exchange.
"""

from __future__ import annotations

import collections.abc
import functools
import hashlib
import json
import math
import threading
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

import pydantic
import typing_extensions
from typing_extensions import is_typeddict

# --------------------------------------------------------------------------------------------
# Shape checking against the SDKs' own request types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tag:
    """A path segment naming the union member chosen by its ``type`` (as pydantic paths do)."""

    value: str


Segment = str | int | Tag


@dataclass(frozen=True)
class Issue:
    """One way a value does not fit its type; each double words it in its provider's style.

    ``kind`` is ``extra`` (a key the type does not define), ``missing`` (a required key),
    ``type`` (wrong JSON type; ``expected`` lists the accepted JSON types), ``value`` (not one
    of the literal ``options``) or ``tag`` (a discriminator ``key`` whose value ``got`` names no
    union member; ``got`` is ``None`` when the key is absent).
    """

    kind: Literal["extra", "missing", "type", "value", "tag"]
    path: tuple[Segment, ...]
    got: object = None
    expected: tuple[str, ...] = ()
    options: tuple[object, ...] = ()
    key: str = ""


# typing_extensions re-exports these on 3.11+, but the SDKs import them from there: take both.
_REQUIRED = {Required, typing_extensions.Required}
_NOT_REQUIRED = {NotRequired, typing_extensions.NotRequired}
_WRAPPERS = {*_REQUIRED, *_NOT_REQUIRED, typing.Annotated, typing_extensions.ReadOnly}
_LIST_ORIGINS = {list, tuple, collections.abc.Iterable, collections.abc.Sequence}
_DICT_ORIGINS = {dict, collections.abc.Mapping}


def _unwrap(tp: Any) -> Any:
    """Strips ``Required``/``NotRequired``/``Annotated`` down to the type they wrap."""
    while get_origin(tp) in _WRAPPERS:
        tp = get_args(tp)[0]
    return tp


def _is_object_type(tp: Any) -> bool:
    return is_typeddict(tp) or (isinstance(tp, type) and issubclass(tp, pydantic.BaseModel))


@functools.cache
def object_fields(cls: Any) -> Mapping[str, tuple[Any, bool]]:
    """``name -> (type, required)`` for a ``TypedDict`` or a pydantic model of an SDK.

    The SDKs write their ``TypedDict`` annotations as strings (``from __future__ import
    annotations``), so ``__required_keys__`` cannot see ``Required[...]``: it is read from the
    resolved hints instead, and ``__required_keys__`` is trusted only for unwrapped keys (where
    it reflects the ``total=`` of the class that declared the key).
    """
    if is_typeddict(cls):
        hints = typing.get_type_hints(cls, include_extras=True)
        fields: dict[str, tuple[Any, bool]] = {}
        for name, hint in hints.items():
            origin = get_origin(hint)
            required = origin in _REQUIRED or (
                origin not in _NOT_REQUIRED and name in cls.__required_keys__
            )
            fields[name] = (hint, required)
        return fields
    return {
        (info.alias or name): (info.annotation, info.is_required())
        for name, info in cls.model_fields.items()
    }


def _flatten_union(tp: Any) -> list[Any]:
    tp = _unwrap(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return [member for arg in get_args(tp) for member in _flatten_union(arg)]
    return [tp]


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _kinds_of(tp: Any) -> tuple[str, ...]:
    """The JSON kinds a type accepts (``object`` and ``Any`` accept them all)."""
    tp = _unwrap(tp)
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return ("null", "boolean", "integer", "number", "string", "array", "object")
    if tp is type(None):
        return ("null",)
    if origin is Literal:
        return tuple(dict.fromkeys(_json_kind(arg) for arg in get_args(tp)))
    if origin in (Union, types.UnionType):
        return tuple(dict.fromkeys(k for member in get_args(tp) for k in _kinds_of(member)))
    if origin in _LIST_ORIGINS:
        return ("array",)
    if origin in _DICT_ORIGINS or _is_object_type(tp):
        return ("object",)
    simple = {str: ("string",), bool: ("boolean",), int: ("integer",), float: ("number", "integer")}
    return simple.get(tp, ())  # other classes (file objects, paths) never come as JSON


@functools.cache
def _tags(cls: Any, key: str) -> tuple[tuple[object, ...], bool] | None:
    """The literal values ``cls`` allows for ``key`` and whether the key may be absent.

    None when ``key`` is not a literal of ``cls`` (then it cannot discriminate).
    """
    entry = object_fields(cls).get(key)
    if entry is None:
        return None
    values: list[object] = []
    optional = not entry[1]
    for member in _flatten_union(entry[0]):
        if member is type(None):
            optional = True
        elif get_origin(member) is Literal:
            values.extend(get_args(member))
        else:
            return None
    return tuple(values), optional


def _discriminator(members: Sequence[Any]) -> str | None:
    for key in ("type", "role"):
        if all(_tags(member, key) is not None for member in members):
            return key
    return None


def check_shape(value: object, tp: Any, path: tuple[Segment, ...] = ()) -> list[Issue]:
    """Every way ``value`` (parsed JSON) fails to be a ``tp`` of the SDK, in document order.

    Objects are closed: a key the type does not define is an ``extra`` issue, as the real APIs
    reject unknown fields. A union picks its member by ``type`` (or ``role``) when every object
    member declares it as a literal; the chosen tag then appears in the path, as in the
    Anthropic API's own messages (``messages.0.content.1.tool_use.id``).
    """
    out: list[Issue] = []
    _check(value, tp, path, out)
    return out


def _check(value: object, tp: Any, path: tuple[Segment, ...], out: list[Issue]) -> None:
    tp = _unwrap(tp)
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return
    if origin in (Union, types.UnionType):
        _check_union(value, _flatten_union(tp), path, out)
        return
    if origin is Literal:
        options = get_args(tp)
        if not any(value == opt and type(value) is type(opt) for opt in options):
            out.append(Issue("value", path, got=value, options=options))
        return
    if _json_kind(value) not in _kinds_of(tp):
        out.append(Issue("type", path, got=value, expected=_kinds_of(tp)))
        return
    if origin in _LIST_ORIGINS:
        (item_type,) = get_args(tp)[:1] or (Any,)
        for index, item in enumerate(typing.cast(list[object], value)):
            _check(item, item_type, (*path, index), out)
    elif origin in _DICT_ORIGINS:
        value_type = get_args(tp)[1] if get_args(tp) else Any
        for key, item in typing.cast(dict[str, object], value).items():
            _check(item, value_type, (*path, key), out)
    elif _is_object_type(tp):
        _check_object(typing.cast(dict[str, object], value), tp, path, out)


def _check_object(
    value: dict[str, object], cls: Any, path: tuple[Segment, ...], out: list[Issue]
) -> None:
    fields = object_fields(cls)
    for name, (hint, required) in fields.items():
        if name in value:
            _check(value[name], hint, (*path, name), out)
        elif required:
            out.append(Issue("missing", (*path, name)))
    out.extend(Issue("extra", (*path, key)) for key in value if key not in fields)


def _check_union(
    value: object, members: list[Any], path: tuple[Segment, ...], out: list[Issue]
) -> None:
    kind = _json_kind(value)
    candidates = [m for m in members if kind in _kinds_of(m)]
    if not candidates:
        expected = tuple(dict.fromkeys(k for m in members for k in _kinds_of(m)))
        out.append(Issue("type", path, got=value, expected=expected))
        return
    attempts: list[list[Issue]] = []
    objects = [m for m in candidates if _is_object_type(m)]
    others = [m for m in candidates if not _is_object_type(m)]
    key = _discriminator(objects) if objects and isinstance(value, dict) else None
    if key is not None:
        assert isinstance(value, dict)
        tag = value.get(key)
        tags = {member: _tags(member, key) or ((), False) for member in objects}
        chosen = [
            member
            for member, (values, optional) in tags.items()
            if (tag in values if key in value else optional)
        ]
        if not chosen and not others:
            options = tuple(dict.fromkeys(v for values, _ in tags.values() for v in values))
            out.append(Issue("tag", path, got=tag, options=options, key=key))
            return
        sub = (*path, Tag(str(tag))) if key == "type" and key in value else path
        for member in chosen:
            attempts.append(check_shape(value, member, sub))
            if not attempts[-1]:
                return
        candidates = others
    for member in candidates:
        attempts.append(check_shape(value, member, path))
        if not attempts[-1]:
            return
    # a member chosen by its tag explains the failure best; otherwise the closest member does
    best: list[Issue] = attempts[0] if key is not None else min(attempts, key=len)
    out.extend(best)


# --------------------------------------------------------------------------------------------
# The doubles' token count
# --------------------------------------------------------------------------------------------

BYTES_PER_TOKEN = 3.5
"""UTF-8 bytes of compact JSON per token in the doubles' count."""

IMAGE_TOKENS = 1_600
"""What one inline image costs: about the most an image costs at Anthropic (1.15 megapixels)."""


@dataclass(frozen=True)
class TokenCount:
    """The doubles' own token count: simple, documented, independent of windowkeeper's.

    A part of a request (the tool list, the system prompt, one message, a reply's content) costs
    ``ceil(B / bytes_per_token)`` tokens, where ``B`` is the length in UTF-8 bytes of its compact
    JSON (``json.dumps(part, ensure_ascii=False, separators=(",", ":"))``, keys in the order
    sent), after two changes that keep the count close to what providers bill:

    - ``cache_control`` / ``prompt_cache_breakpoint`` keys are dropped (markers, not content);
    - an inline image (a base64 ``source`` of an Anthropic image block, or a ``data:`` URL of an
      OpenAI ``image_url`` part) has its data emptied and costs ``IMAGE_TOKENS`` flat;
    - a thinking block's ``signature`` is left out. It is an opaque check on the thinking, not
      text for the model: on real Claude Code requests the input grew by about 0.26 tokens per
      byte of thinking text and by nothing that tracks the signature (a base64 signature
      counted as text would add at least 0.35 tokens per character of it).

    A request's input is the sum over its parts, so a prefix of messages has a count of its own
    (used for prompt-cache accounting) and the count grows with everything sent, JSON
    punctuation included.
    """

    bytes_per_token: float = BYTES_PER_TOKEN

    def __call__(self, part: object) -> int:
        """Tokens of one part of a request (0 for an absent part)."""
        if part is None:
            return 0
        images = [0]
        content = _content_view(part, images, counting=True)
        size = len(json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode())
        per_token = Fraction(str(self.bytes_per_token))
        return math.ceil(Fraction(size) / per_token) + images[0] * IMAGE_TOKENS


_MARKER_KEYS = frozenset({"cache_control", "prompt_cache_breakpoint"})
_UNCOUNTED_IN_THINKING = _MARKER_KEYS | {"signature"}


def _content_view(value: object, images: list[int], *, counting: bool = False) -> object:
    """``value`` without cache markers and with inline image data emptied (and counted).

    ``counting`` also drops thinking signatures, which are billed as nothing but still tell two
    thinking blocks apart for the cache.
    """
    if isinstance(value, list):
        return [_content_view(item, images, counting=counting) for item in value]
    if not isinstance(value, dict):
        return value
    media_type = value.get("media_type")
    if (
        value.get("type") == "base64"
        and isinstance(media_type, str)
        and media_type.startswith("image/")
    ):
        images[0] += 1
        return {**value, "data": ""}
    if value.get("type") == "image_url" and isinstance(value.get("image_url"), dict):
        url = value["image_url"].get("url")
        if isinstance(url, str) and url.startswith("data:"):
            images[0] += 1
            return {**value, "image_url": {**value["image_url"], "url": ""}}
    thinking = counting and value.get("type") == "thinking"
    dropped = _UNCOUNTED_IN_THINKING if thinking else _MARKER_KEYS
    return {
        k: _content_view(v, images, counting=counting) for k, v in value.items() if k not in dropped
    }


def digest(part: object) -> str:
    """A fingerprint of a part's content (markers ignored, key order ignored): cache identity."""
    content = _content_view(part, [0])
    canonical = json.dumps(content, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    """How many leading items two digest sequences share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# --------------------------------------------------------------------------------------------
# Scripts: what the model says
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a scripted reply; the double invents the id when ``id`` is None."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """What a script makes the model say for one request.

    ``text`` becomes a text block / the message content, ``tool_calls`` parallel tool calls
    (stop reason ``tool_use`` / finish reason ``tool_calls``; otherwise ``end_turn`` /
    ``stop``). ``thinking`` (Anthropic only; counted as reasoning tokens for OpenAI) becomes a
    thinking block that the double signs and remembers, and ``redacted_thinking`` adds a
    redacted one, so that sending them back altered is caught.
    """

    text: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    thinking: str | None = None
    redacted_thinking: bool = False


Script = Callable[[dict[str, Any], int], "Reply | str"]
"""``script(body, turn) -> Reply | str``: the parsed, accepted request body and the number of
requests the double accepted before it (0 for the first). A string is a text-only reply."""


@dataclass
class CodingAgent:
    """A ready-made script: a coding agent that works for ``turns`` requests, then answers.

    Request ``t < turns`` gets ``1 + t % 3`` parallel tool calls: ``read_file`` on paths cycling
    through ``paths``, the last one replaced by ``run_tests`` on odd turns, after a short text.
    Request ``turns`` and later get ``final_text`` alone (stop reason ``end_turn`` / ``stop``).
    With ``think`` (default: when the request enables thinking) each reply opens with a
    thinking block. ``run_tool`` gives deterministic tool output for driving the loop.
    """

    turns: int = 3
    paths: Sequence[str] = ("src/app.py", "src/models.py", "tests/test_app.py", "README.md")
    final_text: str = "All tests pass; the change is complete."
    think: bool | None = None
    file_lines: int = 40

    def __call__(self, body: dict[str, Any], turn: int) -> Reply:
        thinking_config = body.get("thinking")
        thinks = (
            self.think
            if self.think is not None
            else isinstance(thinking_config, dict)
            and thinking_config.get("type") in ("enabled", "adaptive")
        )
        thought = f"Turn {turn}: decide what to look at next." if thinks else None
        if turn >= self.turns:
            return Reply(text=self.final_text, thinking=thought)
        count = 1 + turn % 3
        calls = [
            ToolCall("read_file", {"path": self.paths[(turn + k) % len(self.paths)]})
            for k in range(count)
        ]
        if turn % 2 == 1:
            calls[-1] = ToolCall("run_tests", {})
        names = ", ".join(str(call.arguments.get("path", call.name)) for call in calls)
        return Reply(text=f"Checking {names}.", tool_calls=calls, thinking=thought)

    def run_tool(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Deterministic output of the agent's tools: a file's lines, or a test log."""
        if name == "read_file":
            path = str(arguments.get("path", "?"))
            return "\n".join(f"{i:4d}  # {path}: line {i}" for i in range(1, self.file_lines + 1))
        if name == "run_tests":
            return "collected 12 items\n\n............ [100%]\n\n12 passed in 0.31s"
        return f"unknown tool {name!r}"


def as_reply(said: Reply | str) -> Reply:
    """A script's answer as a ``Reply`` (a string is a text-only reply)."""
    return Reply(text=said) if isinstance(said, str) else said


# --------------------------------------------------------------------------------------------
# Recording and HTTP
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One rule a request breaks: the provider-style ``message``, the ``rule`` it comes from,
    and for OpenAI the error's ``param`` and ``code``."""

    rule: str
    message: str
    param: str | None = None
    code: str | None = None


@dataclass(frozen=True)
class Exchange:
    """One recorded request: what came, whether it was accepted, why not, what went back."""

    index: int
    path: str
    body: Any  # the parsed JSON (or the raw text when it was not JSON)
    status: int
    problems: tuple[Problem, ...]
    response: dict[str, Any]

    @property
    def accepted(self) -> bool:
        """The double answered with a model reply (status 200)."""
        return self.status == 200

    @property
    def reasons(self) -> list[str]:
        """The messages of every problem found (the response carries the first)."""
        return [p.message for p in self.problems]


class ApiDouble:
    """Base of the doubles: a local HTTP server that records exchanges, and the common API.

    Subclasses implement ``problems(body)`` (every rule broken, without side effects) and
    ``_serve(path, headers, body)``. Use as a context manager (the server runs inside it), or
    call ``start()`` and ``close()``. Requests are handled one at a time (a lock), so a script
    sees requests in a definite order even from an async client.
    """

    _url_suffix = ""

    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- what tests use ---------------------------------------------------------------------

    def problems(self, body: object) -> list[Problem]:  # pragma: no cover - abstract
        """Every rule of the provider that ``body`` breaks; empty when it would be accepted."""
        raise NotImplementedError

    def check(self, body: object) -> list[str]:
        """The messages of ``problems(body)``: what the provider would object to, if anything.

        No HTTP, no recording, no state change: for property tests over many bodies.
        """
        return [p.message for p in self.problems(body)]

    @property
    def url(self) -> str:
        """The ``base_url`` to give the SDK client."""
        if self._server is None:
            raise RuntimeError("the double is not running: use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self._url_suffix}"

    @property
    def accepted(self) -> list[Exchange]:
        """Exchanges answered with a reply."""
        return [e for e in self.exchanges if e.accepted]

    @property
    def rejections(self) -> list[Exchange]:
        """Exchanges not answered with a reply (4xx, or 500 when a script raised), with reasons."""
        return [e for e in self.exchanges if not e.accepted]

    def counts(self) -> dict[str, int]:
        """``{"requests": n, "accepted": a, "rejected": r}``, for reports."""
        accepted = len(self.accepted)
        return {
            "requests": len(self.exchanges),
            "accepted": accepted,
            "rejected": len(self.exchanges) - accepted,
        }

    def assert_no_rejections(self) -> None:
        """Fails, listing each refused request and why, when any request was refused."""
        if self.rejections:
            lines = [f"request {e.index}: {'; '.join(e.reasons)}" for e in self.rejections]
            raise AssertionError(f"{len(lines)} request(s) rejected:\n" + "\n".join(lines))

    # -- server lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Starts the server on 127.0.0.1 at a free port."""
        if self._server is not None:
            return
        self._server = _Server(("127.0.0.1", 0), _make_handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=type(self).__name__,
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        """Stops the server (idempotent)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> typing.Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- request handling -------------------------------------------------------------------

    def _serve(
        self, path: str, headers: Mapping[str, str], body: object
    ) -> tuple[int, dict[str, Any], tuple[Problem, ...]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _record(self, path: str, raw: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
        with self._lock:
            try:
                body: object = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            try:
                status, payload, problems = self._serve(path, headers, body)
            except Exception as exc:  # a bug in a script or a double: record it, answer 500
                problem = Problem("internal", f"the double failed: {exc!r}")
                status, problems = 500, (problem,)
                payload = {"error": {"type": "api_error", "message": problem.message}}
            self.exchanges.append(
                Exchange(len(self.exchanges), path, body, status, problems, payload)
            )
        return status, json.dumps(payload).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-request is not a failure of the test run."""


def _make_handler(double: ApiDouble) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
        timeout = 10  # an idle kept-alive connection does not hold its thread forever

        def do_POST(self) -> None:
            if self.headers.get("transfer-encoding", "").lower() == "chunked":
                raw = self._read_chunked()
            else:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, out = double._record(self.path.split("?")[0], raw, headers)
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.send_header("request-id", f"req_double_{len(double.exchanges):06d}")
            self.send_header("x-request-id", f"req_double_{len(double.exchanges):06d}")
            self.end_headers()
            self.wfile.write(out)

        def _read_chunked(self) -> bytes:
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: exchanges are recorded on the double instead."""

    return Handler
