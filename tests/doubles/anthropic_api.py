"""A strict local double of the Anthropic Messages API (``POST /v1/messages``).

The real ``anthropic`` SDK is pointed at it (``base_url=api.url``) and gets what the real API
would answer: a ``Message`` from a script when the request is valid, and a 400
``invalid_request_error`` (``anthropic.BadRequestError``) worded like the real API's when it is
not. Which fields exist comes from the SDK's own request types
(``MessageCreateParamsNonStreaming`` and every ``TypedDict`` it reaches), read by introspection;
the conversation rules are written here from the API's documentation:

- ``messages`` non-empty, the first from ``user``, roles strictly alternating (the API would
  merge same-role runs; a judge of windowkeeper's output insists they were merged before);
  ``system``-role messages are refused too: the system prompt goes in ``system``;
- no empty content: no ``""`` or ``[]`` content (the final assistant message, a prefill, is
  allowed but must not be empty either), no empty or whitespace-only text block (also inside
  ``tool_result`` and ``system``), no trailing whitespace at the end of a prefill;
- blocks in the role they belong to: ``tool_use`` and thinking blocks only from ``assistant``,
  ``tool_result``, ``image`` and ``document`` only from ``user``;
- every ``tool_use`` answered by a ``tool_result`` in the very next (user) message, the results
  before any other block there; no ``tool_result`` answering no ``tool_use`` of the previous
  message, none answered twice; ``tool_use`` ids unique in the whole request and of the
  pattern ``^[a-zA-Z0-9_-]+$``; requests with tool blocks must define ``tools``;
- thinking: ``thinking`` / ``redacted_thinking`` blocks only at the start of an assistant
  message, and byte for byte as this double issued them (it keeps every signature and redacted
  payload it gave out); with ``thinking.type == "enabled"`` the assistant message of an ongoing
  tool loop must start with one, ``budget_tokens >= 1024`` and ``< max_tokens``;
- ``max_tokens >= 1``; tools: unique names, custom tools named ``^[a-zA-Z0-9_-]{1,128}$`` with an
  ``input_schema`` of ``type: "object"``, a ``tool_choice`` naming a defined tool; at most 4
  ``cache_control`` breakpoints;
- size: ``prompt is too long: N tokens > M maximum`` when the input count exceeds the window,
  and ``input length and `max_tokens` exceed context limit: N + K > M, ...`` when input plus
  ``max_tokens`` does (both as the real API words them), by ``TokenCount`` (see ``_server``).

Streaming is not modelled: ``stream: true`` is refused with a message saying so.

Usage in replies is computed from the same count. The prompt cache (``cache=``):
``"markers"`` (the API's behaviour, the default) caches the request up to its last
``cache_control`` breakpoint (all of it with a top-level ``cache_control``); ``"always"``
caches every request whole; ``"never"`` caches nothing. The cached part is read, not written,
for as long a prefix of units (the tools, the system prompt, then each message, markers
ignored) as it shares with the cached part of the previous accepted request:
``cache_read_input_tokens`` is that prefix's count, ``cache_creation_input_tokens`` the rest of
the cached part, ``input_tokens`` what follows the last breakpoint. The API's minimum cacheable
length and 20-block lookback are not modelled.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anthropic
from anthropic.types import ToolParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

from ._server import (
    ApiDouble,
    CodingAgent,
    Issue,
    Problem,
    Script,
    Tag,
    TokenCount,
    as_reply,
    check_shape,
    common_prefix,
    digest,
)

REQUEST_TYPE = MessageCreateParamsNonStreaming
"""The SDK type a request body must be (streaming requests are refused separately)."""

CODING_TOOLS: list[ToolParam] = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
    {
        "name": "run_tests",
        "description": "Run the test suite and return its log.",
        "input_schema": {"type": "object", "properties": {}},
    },
]
"""Tool definitions matching ``CodingAgent``'s calls, in the Messages API's shape."""

_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_THINKING = ("thinking", "redacted_thinking")
_ASSISTANT_ONLY = ("tool_use", "server_tool_use", *_THINKING)
_USER_ONLY = ("tool_result", "image", "document")
_BASE62 = string.ascii_letters + string.digits


def _path(segments: Sequence[object]) -> str:
    return ".".join(str(s.value) if isinstance(s, Tag) else str(s) for s in segments)


def _expected(kind: str) -> str:
    labels = {
        "string": "a valid string",
        "integer": "a valid integer",
        "number": "a valid number",
        "boolean": "a valid boolean",
        "array": "a valid list",
        "object": "a valid dictionary",
        "null": "None",
    }
    return labels[kind]


def _options(options: Sequence[object]) -> str:
    quoted = [repr(o) for o in options]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def render_issue(issue: Issue) -> str:
    """An ``Issue`` in the API's (pydantic's) words: ``messages.0.ts: Extra inputs are ...``."""
    where = _path(issue.path)
    if issue.kind == "extra":
        return f"{where}: Extra inputs are not permitted"
    if issue.kind == "missing":
        return f"{where}: Field required"
    if issue.kind == "type":
        return f"{where}: Input should be " + " or ".join(_expected(k) for k in issue.expected)
    if issue.kind == "value":
        return f"{where}: Input should be {_options(issue.options)}"
    if issue.key != "type":
        key_path = _path((*issue.path, issue.key))
        if issue.got is None:
            return f"{key_path}: Field required"
        return f"{key_path}: Input should be {_options(issue.options)}"
    if issue.got is None:
        return f"{where}: Unable to extract tag using discriminator 'type'"
    tags = ", ".join(repr(o) for o in issue.options)
    return (
        f"{where}: Input tag {issue.got!r} found using 'type' does not match any of the "
        f"expected tags: {tags}"
    )


def _blocks(content: object) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _has_marker(value: object) -> bool:
    if isinstance(value, dict):
        if value.get("cache_control") is not None:
            return True
        return any(_has_marker(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_marker(v) for v in value)
    return False


def _count_markers(value: object) -> int:
    if isinstance(value, dict):
        own = 1 if value.get("cache_control") is not None else 0
        return own + sum(_count_markers(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list):
        return sum(_count_markers(v) for v in value)
    return 0


class AnthropicDouble(ApiDouble):
    """The Messages API, strict and local. ``with AnthropicDouble(window=...) as api: ...``.

    ``window`` is the context window in the double's tokens; ``script(body, turn)`` says what
    the model answers (default: ``CodingAgent()``); ``bytes_per_token`` tunes the count;
    ``cache`` is ``"markers"``, ``"always"`` or ``"never"`` (see the module docstring);
    ``model`` overrides the model echoed in replies; ``seed`` makes ids reproducible.
    """

    def __init__(
        self,
        *,
        window: int,
        script: Script | None = None,
        bytes_per_token: float = 3.5,
        cache: Literal["markers", "always", "never"] = "markers",
        model: str | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.window = window
        self.script: Script = script if script is not None else CodingAgent()
        self.count = TokenCount(bytes_per_token)
        self.cache = cache
        self.model = model
        self._rng = random.Random(seed)
        self._secret = self._rng.randbytes(32)
        self._signatures: dict[str, str] = {}  # signature -> thinking text, as issued
        self._redacted: set[str] = set()  # redacted_thinking data, as issued
        self._cached: list[str] = []  # unit digests of the previous request's cached part
        self._turn = 0

    # -- helpers for tests ------------------------------------------------------------------

    def client(self, **options: Any) -> anthropic.Anthropic:
        """A sync SDK client on the double (no retries, strict response parsing)."""
        return anthropic.Anthropic(**self._client_options(options))

    def async_client(self, **options: Any) -> anthropic.AsyncAnthropic:
        """An async SDK client on the double (no retries, strict response parsing)."""
        return anthropic.AsyncAnthropic(**self._client_options(options))

    def _client_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "base_url": self.url,
            "api_key": "test",
            "max_retries": 0,
            "_strict_response_validation": True,
            **options,
        }

    def issue_thinking(self, thinking: str) -> dict[str, str]:
        """A signed thinking block the double will accept back (for bodies built by hand)."""
        signature = self._sign(thinking)
        return {"type": "thinking", "thinking": thinking, "signature": signature}

    def issue_redacted_thinking(self) -> dict[str, str]:
        """A redacted thinking block the double will accept back."""
        data = base64.b64encode(self._rng.randbytes(48)).decode()
        self._redacted.add(data)
        return {"type": "redacted_thinking", "data": data}

    def input_tokens(self, body: Mapping[str, Any]) -> int:
        """The double's count of a request's input: tools + system + every message."""
        return sum(tokens for _, tokens in self._units(body))

    # -- the rules --------------------------------------------------------------------------

    def problems(self, body: object) -> list[Problem]:
        """Every rule ``body`` breaks (the shape first: other rules run on a valid shape)."""
        if not isinstance(body, dict):
            return [Problem("json", "There was an error parsing the body: expected an object")]
        if body.get("stream") is True:
            return [Problem("unsupported", "stream: the double does not stream; omit `stream`")]
        issues = check_shape(body, REQUEST_TYPE)
        if issues:
            return [Problem("schema", render_issue(issue)) for issue in issues]
        out: list[Problem] = []
        self._check_request(body, out)
        messages: list[dict[str, Any]] = body["messages"]
        if not messages:
            out.append(Problem("messages_empty", "messages: at least one message is required"))
            return out
        if self._check_roles(messages, out):
            self._check_content(messages, out)
            self._check_tools_pairing(body, messages, out)
            self._check_thinking(body, messages, out)
        self._check_size(body, out)
        return out

    def _check_request(self, body: dict[str, Any], out: list[Problem]) -> None:
        max_tokens = body["max_tokens"]
        if max_tokens < 1:
            out.append(
                Problem("max_tokens", "max_tokens: Input should be greater than or equal to 1")
            )
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            budget = thinking.get("budget_tokens", 0)
            if budget < 1024:
                out.append(
                    Problem(
                        "thinking_config",
                        "thinking.enabled.budget_tokens: Input should be greater than or equal "
                        "to 1024",
                    )
                )
            if max_tokens <= budget:
                out.append(
                    Problem(
                        "thinking_config",
                        "`max_tokens` must be greater than `thinking.budget_tokens`",
                    )
                )
        system = body.get("system")
        if isinstance(system, list):
            for j, block in enumerate(system):
                self._check_text(block["text"], f"system.{j}", out)
        names: list[str] = []
        for i, tool in enumerate(body.get("tools", [])):
            name = tool.get("name")
            if isinstance(name, str):
                names.append(name)
            if tool.get("type") in (None, "custom"):
                if not _TOOL_NAME.match(name or ""):
                    out.append(
                        Problem(
                            "tools",
                            f"tools.{i}.custom.name: String should match pattern "
                            "'^[a-zA-Z0-9_-]{1,128}$'",
                        )
                    )
                if tool["input_schema"].get("type") != "object":
                    out.append(
                        Problem(
                            "tools", f"tools.{i}.custom.input_schema.type: Input should be 'object'"
                        )
                    )
        if len(set(names)) != len(names):
            out.append(Problem("tools", "tools: Tool names must be unique."))
        choice = body.get("tool_choice")
        if (
            isinstance(choice, dict)
            and choice.get("type") == "tool"
            and choice["name"] not in names
        ):
            out.append(
                Problem(
                    "tools",
                    f"tool_choice.tool.name: Tool '{choice['name']}' not found in the provided tools",
                )
            )
        markers = _count_markers({k: v for k, v in body.items() if k != "cache_control"})
        markers += 1 if body.get("cache_control") is not None else 0
        if markers > 4:
            out.append(
                Problem(
                    "cache_control",
                    f"A maximum of 4 blocks with cache_control may be provided. Found {markers}.",
                )
            )

    def _check_roles(self, messages: list[dict[str, Any]], out: list[Problem]) -> bool:
        """Role rules; False when roles are so wrong that the pairing rules would mislead."""
        ok = True
        for i, message in enumerate(messages):
            if message["role"] == "system":
                out.append(
                    Problem(
                        "role",
                        f"messages.{i}.role: the double takes only 'user' and 'assistant' "
                        "messages; put system text in the top-level `system` parameter",
                    )
                )
                ok = False
        if not ok:
            return False
        if messages[0]["role"] != "user":
            out.append(Problem("role", 'messages: first message must use the "user" role'))
        for i in range(1, len(messages)):
            role = messages[i]["role"]
            if role == messages[i - 1]["role"]:
                out.append(
                    Problem(
                        "role",
                        f'messages.{i}: roles must alternate between "user" and "assistant", '
                        f'but found multiple "{role}" roles in a row',
                    )
                )
                ok = False
        return ok

    def _check_text(self, text: str, where: str, out: list[Problem]) -> None:
        if text == "":
            out.append(Problem("empty_text", f"{where}: text content blocks must be non-empty"))
        elif not text.strip():
            out.append(
                Problem(
                    "empty_text", f"{where}: text content blocks must contain non-whitespace text"
                )
            )

    def _check_content(self, messages: list[dict[str, Any]], out: list[Problem]) -> None:
        last = len(messages) - 1
        for i, message in enumerate(messages):
            role, content = message["role"], message["content"]
            prefill = i == last and role == "assistant"
            if content in ("", []):
                out.append(
                    Problem(
                        "empty_content",
                        f"messages.{i}: the final assistant message (a prefill) must not be empty"
                        if prefill
                        else f"messages.{i}: all messages must have non-empty content except for "
                        "the optional final assistant message",
                    )
                )
                continue
            if isinstance(content, str):
                self._check_text(content, f"messages.{i}.content", out)
            seen_other = False
            for j, block in enumerate(_blocks(content) if isinstance(content, list) else []):
                kind = block["type"]
                where = f"messages.{i}.content.{j}"
                if kind == "text":
                    self._check_text(block["text"], where, out)
                if kind == "tool_result" and isinstance(block.get("content"), list):
                    for k, inner in enumerate(block["content"]):
                        if inner["type"] == "text":
                            self._check_text(inner["text"], f"{where}.content.{k}", out)
                if role == "user" and kind in _ASSISTANT_ONLY:
                    out.append(
                        Problem(
                            "block_role",
                            f"{where}: `{kind}` blocks can only be in `assistant` messages",
                        )
                    )
                if role == "assistant" and kind in _USER_ONLY:
                    out.append(
                        Problem(
                            "block_role", f"{where}: `{kind}` blocks can only be in `user` messages"
                        )
                    )
                if role == "assistant" and kind in _THINKING and seen_other:
                    out.append(
                        Problem(
                            "thinking_position",
                            f"{where}: `{kind}` blocks must come first in an `assistant` message, "
                            "before any other block",
                        )
                    )
                seen_other = seen_other or kind not in _THINKING
                if (
                    kind == "thinking"
                    and self._signatures.get(block["signature"]) != block["thinking"]
                ):
                    out.append(
                        Problem(
                            "thinking_signature",
                            f"{where}: Invalid `signature` in `thinking` block",
                        )
                    )
                if kind == "redacted_thinking" and block["data"] not in self._redacted:
                    out.append(
                        Problem(
                            "thinking_signature",
                            f"{where}: Invalid `data` in `redacted_thinking` block",
                        )
                    )
            if prefill:
                blocks = _blocks(content)
                tail = blocks[-1] if blocks else {}
                if tail.get("type") == "text" and tail["text"] != tail["text"].rstrip():
                    out.append(
                        Problem(
                            "trailing_whitespace",
                            "messages: final assistant content cannot end with trailing whitespace",
                        )
                    )

    def _check_tools_pairing(
        self, body: dict[str, Any], messages: list[dict[str, Any]], out: list[Problem]
    ) -> None:
        seen: set[str] = set()
        uses_tools = False
        for i, message in enumerate(messages):
            blocks = _blocks(message["content"])
            if message["role"] == "assistant":
                ids = []
                for j, block in enumerate(blocks):
                    if block["type"] not in ("tool_use", "server_tool_use"):
                        continue
                    uses_tools = True
                    block_id = block["id"]
                    if not _ID.match(block_id):
                        out.append(
                            Problem(
                                "id_pattern",
                                f"messages.{i}.content.{j}.{block['type']}.id: String should "
                                "match pattern '^[a-zA-Z0-9_-]+$'",
                            )
                        )
                    if block_id in seen:
                        out.append(
                            Problem(
                                "duplicate_tool_use_id",
                                f"messages.{i}.content.{j}: `tool_use` ids must be unique",
                            )
                        )
                    seen.add(block_id)
                    if block["type"] == "tool_use":
                        ids.append(block_id)
                following = messages[i + 1] if i + 1 < len(messages) else None
                answered = {
                    b["tool_use_id"]
                    for b in _blocks(following["content"] if following else [])
                    if b["type"] == "tool_result"
                }
                missing = [x for x in ids if x not in answered]
                if missing:
                    out.append(
                        Problem(
                            "tool_pairing",
                            f"messages.{i}: `tool_use` ids were found without `tool_result` "
                            f"blocks immediately after: {', '.join(missing)}. Each `tool_use` "
                            "block must have a corresponding `tool_result` block in the next "
                            "message.",
                        )
                    )
                continue
            previous = messages[i - 1] if i > 0 else None
            offered = {
                b["id"]
                for b in _blocks(previous["content"] if previous else [])
                if b["type"] == "tool_use"
            }
            answered_here: set[str] = set()
            leading = True
            for j, block in enumerate(blocks):
                if block["type"] != "tool_result":
                    leading = False
                    continue
                uses_tools = True
                where = f"messages.{i}.content.{j}"
                result_id = block["tool_use_id"]
                if not leading:
                    out.append(
                        Problem(
                            "tool_pairing",
                            f"{where}: `tool_result` blocks must come first in the `user` "
                            "message content, before any other block",
                        )
                    )
                if result_id not in offered:
                    out.append(
                        Problem(
                            "tool_pairing",
                            f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{result_id}. Each `tool_result` block must have a corresponding "
                            "`tool_use` block in the previous message.",
                        )
                    )
                elif result_id in answered_here:
                    out.append(
                        Problem(
                            "tool_pairing",
                            f"{where}: each `tool_use` must have a single result. Found multiple "
                            f"`tool_result` blocks with id: {result_id}",
                        )
                    )
                answered_here.add(result_id)
        if uses_tools and not body.get("tools"):
            out.append(
                Problem(
                    "tools_required",
                    "Requests which include `tool_use` or `tool_result` blocks must define tools.",
                )
            )

    def _check_thinking(
        self, body: dict[str, Any], messages: list[dict[str, Any]], out: list[Problem]
    ) -> None:
        thinking = body.get("thinking")
        if not (isinstance(thinking, dict) and thinking.get("type") == "enabled"):
            return
        if len(messages) < 2 or messages[-1]["role"] != "user":
            return
        index = len(messages) - 2
        blocks = _blocks(messages[index]["content"])
        in_loop = any(b["type"] == "tool_use" for b in blocks) and any(
            b["type"] == "tool_result" for b in _blocks(messages[-1]["content"])
        )
        if in_loop and blocks[0]["type"] not in _THINKING:
            out.append(
                Problem(
                    "thinking_required",
                    f"messages.{index}.content.0.type: Expected `thinking` or "
                    f"`redacted_thinking`, but found `{blocks[0]['type']}`. When `thinking` is "
                    "enabled, a final `assistant` message must start with a thinking block "
                    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
                    "recommend you include thinking blocks from previous turns. To avoid this "
                    "requirement, disable `thinking`.",
                )
            )

    def _check_size(self, body: dict[str, Any], out: list[Problem]) -> None:
        total = self.input_tokens(body)
        max_tokens = body["max_tokens"]
        if total > self.window:
            out.append(
                Problem(
                    "context_window", f"prompt is too long: {total} tokens > {self.window} maximum"
                )
            )
        elif total + max_tokens > self.window:
            out.append(
                Problem(
                    "context_window",
                    f"input length and `max_tokens` exceed context limit: {total} + {max_tokens} "
                    f"> {self.window}, decrease input length or `max_tokens` and try again",
                )
            )

    # -- answering --------------------------------------------------------------------------

    def _units(self, body: Mapping[str, Any]) -> list[tuple[str, int]]:
        """``(digest, tokens)`` of the tools, the system prompt and each message, in order."""
        parts = [body.get("tools"), body.get("system"), *body.get("messages", [])]
        return [(digest(part), self.count(part)) for part in parts]

    def _cached_units(self, body: Mapping[str, Any]) -> int:
        """How many leading units the request asks to cache."""
        size = 2 + len(body["messages"])
        if self.cache == "always" or (self.cache == "markers" and body.get("cache_control")):
            return size
        if self.cache == "never":
            return 0
        parts = [body.get("tools"), body.get("system"), *body["messages"]]
        marked = [n for n, part in enumerate(parts) if _has_marker(part)]
        return marked[-1] + 1 if marked else 0

    def _sign(self, thinking: str) -> str:
        nonce = self._rng.randbytes(8)
        mac = hmac.new(self._secret, nonce + thinking.encode(), hashlib.sha256).digest()
        signature = base64.b64encode(nonce + mac).decode()
        self._signatures[signature] = thinking
        return signature

    def _id(self, prefix: str) -> str:
        return prefix + "".join(self._rng.choice(_BASE62) for _ in range(24))

    def _serve(
        self, path: str, headers: Mapping[str, str], body: object
    ) -> tuple[int, dict[str, Any], tuple[Problem, ...]]:
        if path != "/v1/messages":
            return 404, _error("not_found_error", f"Not found: {path}"), ()
        if "anthropic-version" not in headers:
            problem = Problem("headers", "anthropic-version: header is required")
            return 400, _error("invalid_request_error", problem.message), (problem,)
        if not (headers.get("x-api-key") or headers.get("authorization")):
            problem = Problem("headers", "x-api-key header is required")
            return 401, _error("authentication_error", problem.message), (problem,)
        problems = tuple(self.problems(body))
        if problems:
            return 400, _error("invalid_request_error", problems[0].message), problems
        assert isinstance(body, dict)
        return 200, self._answer(body), ()

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        units = self._units(body)
        digests = [d for d, _ in units]
        cached = self._cached_units(body)
        read_units = min(common_prefix(digests[:cached], self._cached), cached)
        read = sum(t for _, t in units[:read_units])
        creation = sum(t for _, t in units[:cached]) - read
        total = sum(t for _, t in units)

        said = as_reply(self.script(body, self._turn))
        self._turn += 1
        if cached:  # a request the script failed on changes nothing
            self._cached = digests[:cached]
        content: list[dict[str, Any]] = []
        if said.thinking is not None:
            content.append(self.issue_thinking(said.thinking))
        if said.redacted_thinking:
            content.append(self.issue_redacted_thinking())
        if said.text:
            content.append({"type": "text", "text": said.text})
        for call in said.tool_calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": call.id or self._id("toolu_"),
                    "name": call.name,
                    "input": dict(call.arguments),
                }
            )
        output = max(1, self.count(content))
        stop = "tool_use" if said.tool_calls else "end_turn"
        if output > body["max_tokens"]:
            stop = "max_tokens"
        return {
            "id": self._id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": self.model or body["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": total - read - creation,
                "output_tokens": output,
                "cache_creation_input_tokens": creation,
                "cache_read_input_tokens": read,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": creation,
                    "ephemeral_1h_input_tokens": 0,
                },
                "service_tier": "standard",
            },
        }


def _error(kind: str, message: str) -> dict[str, Any]:
    """The API's error body: ``{"type": "error", "error": {"type": ..., "message": ...}}``."""
    return {"type": "error", "error": {"type": kind, "message": message}}
