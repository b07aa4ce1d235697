"""A strict local double of the OpenAI Chat Completions API (``POST /v1/chat/completions``).

The real ``openai`` SDK is pointed at it (``base_url=api.url``, which ends in ``/v1``) and gets
a ``ChatCompletion`` from a script when the request is valid, and a 400 with the API's error
shape (``{"error": {"message", "type": "invalid_request_error", "param", "code"}}``, hence
``openai.BadRequestError`` with ``.param`` and ``.code``) when it is not. Fields come from the
SDK's own ``CompletionCreateParamsNonStreaming`` and every ``TypedDict`` it reaches (message
params of each role, content parts, tool calls, tools), read by introspection: an unknown field
is ``Unknown parameter: 'messages[0].ts'.`` (``code="unknown_parameter"``), a content part of a
type the role does not take (``thinking``, any Anthropic block) is ``Invalid value: ...``
(``code="invalid_value"``). The conversation rules, written from the API's documentation:

- ``messages`` non-empty, roles from the SDK's set, no empty content array;
- an assistant message has ``content`` or ``tool_calls`` (or a refusal, function call, audio);
  ``tool_calls`` is not an empty array;
- every assistant ``tool_calls`` answered by ``tool`` messages right after it, in any order,
  all before the next message of another role; no ``tool`` message whose ``tool_call_id``
  answers no pending call (or answers one twice); tool call ids unique in the whole request;
- tool function names match ``^[a-zA-Z0-9_-]{1,64}$``; ``n``, ``max_tokens`` and
  ``max_completion_tokens`` at least 1;
- size, by ``TokenCount`` (see ``_server``) of the tools and the messages: over the window, or
  with ``max_completion_tokens`` (else ``max_tokens``) added over it, is
  ``code="context_length_exceeded"`` worded as the API words it.

Streaming is not modelled: ``stream: true`` is refused with a message saying so.

Usage in replies: ``prompt_tokens`` is the input count, ``completion_tokens`` the count of the
reply message plus its reasoning (a script's ``thinking``, reported as ``reasoning_tokens``),
and ``prompt_tokens_details.cached_tokens`` (with ``cache="always"``, the default: the API
caches automatically) the count of the longest prefix of units (the tools, then each message,
markers ignored) identical to the previous accepted request's. The API's 1,024-token minimum
and 128-token granularity are not modelled; ``cache="never"`` reports 0.
"""

from __future__ import annotations

import json
import random
import re
import string
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming

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

REQUEST_TYPE = CompletionCreateParamsNonStreaming
"""The SDK type a request body must be (streaming requests are refused separately)."""

CODING_TOOLS: list[ChatCompletionFunctionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run the test suite and return its log.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]
"""Tool definitions matching ``CodingAgent``'s calls, in the Chat Completions shape."""

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
_BASE62 = string.ascii_letters + string.digits


def param_path(segments: Sequence[object]) -> str:
    """``("messages", 0, "content")`` as the API writes it: ``messages[0].content``."""
    out = ""
    for segment in segments:
        if isinstance(segment, Tag):
            continue
        if isinstance(segment, int):
            out += f"[{segment}]"
        else:
            out += f".{segment}" if out else str(segment)
    return out


def _article(kind: str) -> str:
    return {"integer": "an integer", "array": "an array", "object": "an object"}.get(
        kind, "null" if kind == "null" else f"a {kind}"
    )


def _supported(options: Sequence[object]) -> str:
    quoted = [f"'{o}'" for o in options]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def _kind(value: object) -> str:
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
    return "array" if isinstance(value, list) else "object"


def render_issue(issue: Issue) -> Problem:
    """An ``Issue`` as the API reports it: message, ``param`` and ``code``."""
    where = param_path(issue.path)
    if issue.kind == "extra":
        if len(issue.path) == 1:
            return Problem("schema", f"Unrecognized request argument supplied: {where}")
        return Problem("schema", f"Unknown parameter: '{where}'.", where, "unknown_parameter")
    if issue.kind == "missing":
        return Problem(
            "schema", f"Missing required parameter: '{where}'.", where, "missing_required_parameter"
        )
    if issue.kind == "type":
        expected = [_article(k) for k in issue.expected]
        wanted = expected[0] if len(expected) == 1 else "one of " + " or ".join(expected)
        return Problem(
            "schema",
            f"Invalid type for '{where}': expected {wanted}, but got {_article(_kind(issue.got))} "
            "instead.",
            where,
            "invalid_type",
        )
    if issue.kind == "tag":
        where = param_path((*issue.path, issue.key))
        if issue.got is None:
            return Problem(
                "schema",
                f"Missing required parameter: '{where}'.",
                where,
                "missing_required_parameter",
            )
    return Problem(
        "schema",
        f"Invalid value: '{issue.got}'. Supported values are: {_supported(issue.options)}.",
        where,
        "invalid_value",
    )


class OpenAIDouble(ApiDouble):
    """Chat Completions, strict and local. ``with OpenAIDouble(window=...) as api: ...``.

    ``window`` is the context window in the double's tokens; ``script(body, turn)`` says what
    the model answers (default: ``CodingAgent()``); ``bytes_per_token`` tunes the count;
    ``cache`` is ``"always"`` or ``"never"``; ``model`` overrides the model echoed in replies;
    ``seed`` makes ids reproducible.
    """

    _url_suffix = "/v1"

    def __init__(
        self,
        *,
        window: int,
        script: Script | None = None,
        bytes_per_token: float = 3.5,
        cache: Literal["always", "never"] = "always",
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
        self._previous: list[str] = []  # unit digests of the previous accepted request
        self._turn = 0

    # -- helpers for tests ------------------------------------------------------------------

    def client(self, **options: Any) -> openai.OpenAI:
        """A sync SDK client on the double (no retries, strict response parsing)."""
        return openai.OpenAI(**self._client_options(options))

    def async_client(self, **options: Any) -> openai.AsyncOpenAI:
        """An async SDK client on the double (no retries, strict response parsing)."""
        return openai.AsyncOpenAI(**self._client_options(options))

    def _client_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "base_url": self.url,
            "api_key": "test",
            "max_retries": 0,
            "_strict_response_validation": True,
            **options,
        }

    def input_tokens(self, body: Mapping[str, Any]) -> int:
        """The double's count of a request's input: tools + every message."""
        return sum(tokens for _, tokens in self._units(body))

    # -- the rules --------------------------------------------------------------------------

    def problems(self, body: object) -> list[Problem]:
        """Every rule ``body`` breaks (the shape first: other rules run on a valid shape)."""
        if not isinstance(body, dict):
            return [Problem("json", "We could not parse the JSON body of your request.")]
        if body.get("stream") is True:
            return [Problem("unsupported", "The double does not stream; omit 'stream'.", "stream")]
        issues = check_shape(body, REQUEST_TYPE)
        if issues:
            return [render_issue(issue) for issue in issues]
        out: list[Problem] = []
        for name in ("n", "max_tokens", "max_completion_tokens"):
            value = body.get(name)
            if value is not None and value < 1:
                out.append(
                    Problem(
                        "limits",
                        f"Invalid '{name}': integer below minimum value. Expected a value >= 1, "
                        f"but got {value} instead.",
                        name,
                        "integer_below_min_value",
                    )
                )
        for i, tool in enumerate(body.get("tools", [])):
            if tool["type"] == "function":
                self._check_tool_name(tool["function"]["name"], f"tools[{i}].function.name", out)
        messages: list[dict[str, Any]] = body["messages"]
        if not messages:
            out.append(_empty_array("messages"))
        self._check_messages(messages, out)
        self._check_size(body, out)
        return out

    def _check_tool_name(self, name: str, where: str, out: list[Problem]) -> None:
        if len(name) > 64:
            out.append(
                Problem(
                    "tools",
                    f"Invalid '{where}': string too long. Expected a string with maximum length "
                    f"64, but got a string with length {len(name)} instead.",
                    where,
                    "string_above_max_length",
                )
            )
        elif not _TOOL_NAME.match(name):
            out.append(
                Problem(
                    "tools",
                    f"Invalid '{where}': string does not match pattern. Expected a string that "
                    "matches the pattern '^[a-zA-Z0-9_-]+$'.",
                    where,
                    "invalid_value",
                )
            )

    def _check_messages(self, messages: list[dict[str, Any]], out: list[Problem]) -> None:
        seen: dict[str, str] = {}  # tool call id -> where it was issued
        pending: list[str] = []  # ids of the open assistant message's calls, unanswered
        opener = -1  # index of the assistant message whose calls are pending
        for i, message in enumerate(messages):
            role = message["role"]
            content = message.get("content")
            if content == []:
                out.append(_empty_array(f"messages[{i}].content"))
            if role == "tool":
                call_id = message["tool_call_id"]
                if call_id in pending:
                    pending.remove(call_id)
                else:
                    out.append(
                        Problem(
                            "tool_pairing",
                            "Invalid parameter: messages with role 'tool' must be a response to "
                            "a preceeding message with 'tool_calls'.",
                            f"messages.[{i}].role",
                        )
                    )
                continue
            if pending:
                out.append(_unanswered(opener, pending))
            pending = []
            if role != "assistant":
                continue
            calls = message.get("tool_calls")
            if calls == []:
                out.append(_empty_array(f"messages[{i}].tool_calls"))
            others = ("function_call", "refusal", "audio")
            if content is None and not calls and all(message.get(k) is None for k in others):
                out.append(
                    Problem(
                        "empty_content",
                        "Invalid value for 'content': expected a string, got null.",
                        f"messages.[{i}].content",
                    )
                )
            for j, call in enumerate(calls or []):
                where = f"messages[{i}].tool_calls[{j}]"
                if call["id"] in seen:
                    out.append(
                        Problem(
                            "duplicate_tool_call_id",
                            f"Invalid '{where}.id': duplicate tool call id '{call['id']}' (first "
                            f"in {seen[call['id']]}); each tool call id must be unique.",
                            f"{where}.id",
                            "invalid_value",
                        )
                    )
                seen.setdefault(call["id"], where)
                pending.append(call["id"])
            opener = i
        if pending:
            out.append(_unanswered(opener, pending))

    def _check_size(self, body: dict[str, Any], out: list[Problem]) -> None:
        prompt = self.input_tokens(body)
        completion = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        if completion and prompt + completion > self.window:
            message = (
                f"This model's maximum context length is {self.window} tokens. However, you "
                f"requested {prompt + completion} tokens ({prompt} in the messages, {completion} "
                "in the completion). Please reduce the length of the messages or completion."
            )
        elif prompt > self.window:
            message = (
                f"This model's maximum context length is {self.window} tokens. However, your "
                f"messages resulted in {prompt} tokens. Please reduce the length of the messages."
            )
        else:
            return
        out.append(Problem("context_window", message, "messages", "context_length_exceeded"))

    # -- answering --------------------------------------------------------------------------

    def _units(self, body: Mapping[str, Any]) -> list[tuple[str, int]]:
        """``(digest, tokens)`` of the tools and each message, in order."""
        parts = [body.get("tools"), *body.get("messages", [])]
        return [(digest(part), self.count(part)) for part in parts]

    def _id(self, prefix: str, size: int) -> str:
        return prefix + "".join(self._rng.choice(_BASE62) for _ in range(size))

    def _serve(
        self, path: str, headers: Mapping[str, str], body: object
    ) -> tuple[int, dict[str, Any], tuple[Problem, ...]]:
        if path != "/v1/chat/completions":
            return 404, _error(Problem("path", f"Invalid URL (POST {path})")), ()
        if not headers.get("authorization"):
            problem = Problem("headers", "You didn't provide an API key.")
            return 401, _error(problem), (problem,)
        problems = tuple(self.problems(body))
        if problems:
            return 400, _error(problems[0]), problems
        assert isinstance(body, dict)
        return 200, self._answer(body), ()

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        units = self._units(body)
        digests = [d for d, _ in units]
        shared = common_prefix(digests, self._previous) if self.cache == "always" else 0
        cached = sum(t for _, t in units[:shared])
        prompt = sum(t for _, t in units)

        said = as_reply(self.script(body, self._turn))
        self._turn += 1
        self._previous = digests  # a request the script failed on changes nothing
        message: dict[str, Any] = {"role": "assistant", "content": said.text, "refusal": None}
        if said.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or self._id("call_", 24),
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
                }
                for call in said.tool_calls
            ]
        reasoning = self.count(said.thinking)
        completion = max(1, self.count({k: v for k, v in message.items() if v is not None}))
        completion += reasoning
        finish = "tool_calls" if said.tool_calls else "stop"
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if limit is not None and completion > limit:
            finish = "length"
        choices = [
            {"index": n, "message": message, "finish_reason": finish, "logprobs": None}
            for n in range(body.get("n") or 1)
        ]
        return {
            "id": self._id("chatcmpl-", 29),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model or body["model"],
            "choices": choices,
            "service_tier": "default",
            "system_fingerprint": "fp_double",
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": reasoning,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
        }


def _empty_array(where: str) -> Problem:
    return Problem(
        "empty_content",
        f"Invalid '{where}': empty array. Expected an array with minimum length 1, but got an "
        "empty array instead.",
        where,
        "empty_array",
    )


def _unanswered(opener: int, pending: Sequence[str]) -> Problem:
    return Problem(
        "tool_pairing",
        "An assistant message with 'tool_calls' must be followed by tool messages responding to "
        "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(pending),
        f"messages.[{opener}].role",
    )


def _error(problem: Problem) -> dict[str, Any]:
    """The API's error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {
        "error": {
            "message": problem.message,
            "type": "invalid_request_error",
            "param": problem.param,
            "code": problem.code,
        }
    }
