"""Drive a real browser from the tests: Chromium over its DevTools protocol, Firefox over BiDi.

Both protocols are JSON messages over one WebSocket, so a small client over the standard library
does (RFC 6455: the opening handshake, masked client frames, text, ping and close): no browser
driver and no package to install. :class:`Chromium` starts Debian's ``chromium`` headless with
``--remote-debugging-port=0`` and reads the address it prints; :class:`Firefox` starts
``firefox-esr`` the same way and speaks WebDriver BiDi, which needs no geckodriver.

Every wait has a deadline, so a browser that stops answering fails a test instead of hanging it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import re
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

TIMEOUT = 20.0  # seconds for any one answer of the browser


class BrowserError(RuntimeError):
    """The browser did not start, did not answer in time, or answered with an error."""


class WebSocket:
    """A minimal client WebSocket (text messages only), enough for a local browser."""

    def __init__(self, url: str, *, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise BrowserError(f"{url}: the connection closed during the handshake")
            head += chunk
        status, _, rest = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n", 1)[0]:
            raise BrowserError(f"{url}: no WebSocket upgrade: {status[:200]!r}")
        self._buffer = rest

    def send(self, text: str) -> None:
        """Send one text message (masked, as a client must)."""
        payload = text.encode()
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x81, 0x80 | size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, size)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def _read(self, count: int) -> bytes:
        while len(self._buffer) < count:
            chunk = self.sock.recv(max(65536, count - len(self._buffer)))
            if not chunk:
                raise BrowserError("the browser closed the connection")
            self._buffer += chunk
        found, self._buffer = self._buffer[:count], self._buffer[count:]
        return found

    def receive(self) -> str:
        """The next text message (fragments joined; pings answered)."""
        parts: list[bytes] = []
        while True:
            first, second = self._read(2)
            opcode, size = first & 0x0F, second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", self._read(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", self._read(8))
            payload = self._read(size)  # a server's frames are not masked
            if opcode == 0x8:
                raise BrowserError("the browser closed the WebSocket")
            if opcode == 0x9:
                self.sock.sendall(
                    struct.pack("!BB", 0x8A, 0x80 | len(payload)) + b"\0" * 4 + payload
                )
                continue
            if opcode in (0x1, 0x2, 0x0):
                parts.append(payload)
                if first & 0x80:
                    return b"".join(parts).decode()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


_DRAINS: dict[int, threading.Thread] = {}  # by browser pid: the thread reading its stderr


def _launch(command: list[str], **env: str) -> subprocess.Popen[str]:
    """Start a browser in its own process group, its stderr piped (where it prints its address)."""
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
        start_new_session=True,
    )


def _listening(process: subprocess.Popen[str], pattern: str, timeout: float) -> str:
    """The WebSocket address the browser prints on stderr once it listens.

    A thread reads stderr to its end, so that a browser that prints nothing cannot block the
    wait past its deadline, and a full pipe never blocks the browser.
    """
    stream = process.stderr
    assert stream is not None
    lines: queue.Queue[str | None] = queue.Queue()
    heard = threading.Event()  # set once the address is found: later lines are dropped

    def drain() -> None:
        for line in stream:
            if not heard.is_set():
                lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    _DRAINS[process.pid] = reader
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        found = re.search(pattern, line)
        if found:
            heard.set()
            return found.group(1)
    _stop(process)
    raise BrowserError("the browser printed no debugging address:\n" + "".join(seen[-20:]))


class _Protocol:
    """Commands with ids and the events that arrive between their answers."""

    def __init__(self, socket_: WebSocket) -> None:
        self.ws = socket_
        self.events: list[dict[str, Any]] = []
        self._next = 0

    def call(self, method: str, params: dict[str, Any] | None = None, **extra: Any) -> Any:
        """Send a command; return its result (events meanwhile are kept in ``events``)."""
        self._next += 1
        ident = self._next
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params or {}, **extra}))
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            message = json.loads(self.ws.receive())
            if message.get("id") != ident:
                if "method" in message:
                    self.events.append(message)
                continue
            if "error" in message:
                raise BrowserError(f"{method}: {message['error']} {message.get('message', '')}")
            return message.get("result")
        raise BrowserError(f"{method}: no answer in {TIMEOUT} s")

    def wait_for(self, test: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        """Poll ``test`` until it holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if test():
                return
            time.sleep(0.02)
        raise BrowserError(f"timed out waiting for {what}")


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox") or "/usr/bin/firefox-esr"


class ChromiumPage(_Protocol):
    """One tab of a headless Chromium, driven over the DevTools protocol (flat sessions)."""

    def __init__(self, browser: Chromium) -> None:
        super().__init__(browser.ws)
        self.browser = browser
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        self.events = browser.events
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A command to this tab."""
        return self.browser.call(method, params, sessionId=self.session)

    def mine(self, method: str) -> list[dict[str, Any]]:
        """This tab's events named ``method``, in order."""
        return [
            event["params"]
            for event in self.events
            if event.get("sessionId") == self.session and event["method"] == method
        ]

    def open(self, url: str) -> None:
        """Load ``url`` and wait until the report's script has drawn it."""
        self.send("Page.navigate", {"url": url})
        self.wait_for(
            lambda: self.evaluate("document.body && document.body.dataset.ready") == "true",
            "the page to render",
        )

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (returned by value)."""
        found = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in found:
            raise BrowserError(f"{expression}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def center(self, selector: str) -> tuple[float, float]:
        """The viewport point at the middle of the element ``selector`` (scrolled into view)."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center', inline: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if not box:
            raise BrowserError(f"no element {selector}")
        return float(box[0]), float(box[1])

    def mouse(self, kind: str, x: float, y: float, **extra: Any) -> None:
        self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})

    def click(self, selector: str) -> None:
        """Move the mouse onto ``selector`` and click it, as a user would."""
        x, y = self.center(selector)
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, button="left", clickCount=1)
        self.mouse("mouseReleased", x, y, button="left", clickCount=1)

    def hover(self, selector: str) -> None:
        """Move the mouse onto ``selector``."""
        x, y = self.center(selector)
        self.mouse("mouseMoved", x, y)

    def key(self, key: str, *, shift: bool = False) -> None:
        """Press and release one key (``Tab``, ``ArrowRight``, ``Enter``, ``Home``...)."""
        codes = {"Tab": 9, "Enter": 13, "ArrowLeft": 37, "ArrowRight": 39, "Home": 36, "End": 35}
        common: dict[str, Any] = {"key": key, "code": key, "windowsVirtualKeyCode": codes[key]}
        if shift:
            common["modifiers"] = 8  # the protocol's bit for Shift
        if key == "Enter":
            common["text"] = "\r"
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", **common})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **common})


class Chromium(_Protocol):
    """A headless Chromium with its DevTools protocol on a free local port."""

    def __init__(self, profile: Path) -> None:
        self.process = _launch(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "--window-size=1280,900",
                "about:blank",
            ],
        )
        address = _listening(self.process, r"DevTools listening on (ws://\S+)", TIMEOUT)
        super().__init__(WebSocket(address))

    def page(self) -> ChromiumPage:
        """A new tab."""
        return ChromiumPage(self)

    def close(self) -> None:
        """Ask the browser to quit, then make sure it did."""
        with contextlib.suppress(BrowserError, OSError):
            self.call("Browser.close")
        self.ws.close()
        _stop(self.process)


class Firefox(_Protocol):
    """A headless Firefox with WebDriver BiDi on a free local port (one browsing context)."""

    def __init__(self, profile: Path) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        self.process = _launch(
            [
                FIREFOX,
                "--headless",
                "--no-remote",
                "--profile",
                str(profile),
                "--remote-debugging-port=0",
                "--width=1280",
                "--height=900",
                "about:blank",
            ],
            MOZ_CRASHREPORTER_DISABLE="1",
        )
        address = _listening(self.process, r"WebDriver BiDi listening on (ws://\S+)", 60)
        super().__init__(WebSocket(address + "/session"))
        self.call("session.new", {"capabilities": {}})
        self.call("session.subscribe", {"events": ["log.entryAdded", "network.beforeRequestSent"]})
        tree = self.call("browsingContext.getTree", {})
        self.context = tree["contexts"][0]["context"]

    def open(self, url: str) -> None:
        """Load ``url`` and wait until the report's script has drawn it."""
        self.call(
            "browsingContext.navigate", {"context": self.context, "url": url, "wait": "complete"}
        )
        self.wait_for(
            lambda: self.evaluate("document.body && document.body.dataset.ready") == "true",
            "the page to render",
        )

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (primitives and arrays of them)."""
        found = self.call(
            "script.evaluate",
            {"expression": expression, "target": {"context": self.context}, "awaitPromise": False},
        )
        if found.get("type") == "exception":
            raise BrowserError(f"{expression}: {found['exceptionDetails']}")
        return _bidi_value(found["result"])

    def click(self, selector: str) -> None:
        """Move the pointer onto ``selector`` and click it (``input.performActions``)."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center', inline: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)]; })()"
        )
        x, y = box
        pointer = [
            {"type": "pointerMove", "x": x, "y": y},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerUp", "button": 0},
        ]
        self.call(
            "input.performActions",
            {
                "context": self.context,
                "actions": [{"type": "pointer", "id": "mouse", "actions": pointer}],
            },
        )

    def key(self, key: str) -> None:
        """Press and release one key (``ArrowRight``, ``Tab``...) as WebDriver names it."""
        value = _WEBDRIVER_KEYS[key]
        self.call(
            "input.performActions",
            {
                "context": self.context,
                "actions": [
                    {
                        "type": "key",
                        "id": "keyboard",
                        "actions": [
                            {"type": "keyDown", "value": value},
                            {"type": "keyUp", "value": value},
                        ],
                    }
                ],
            },
        )

    def close(self) -> None:
        """Ask the browser to quit, then make sure it did."""
        with contextlib.suppress(BrowserError, OSError):
            self.call("browser.close", {})
        self.ws.close()
        _stop(self.process)


# WebDriver's code points for the keys the tests press.
_WEBDRIVER_KEYS = {
    "Tab": "\ue004",
    "Enter": "\ue007",
    "ArrowLeft": "\ue012",
    "ArrowRight": "\ue014",
}


def _stop(process: subprocess.Popen[str]) -> None:
    """Wait for the browser to end (kill its process group if it does not); release its pipe."""
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the group this test started, its children too
        process.wait(timeout=TIMEOUT)
    drain = _DRAINS.pop(process.pid, None)
    if drain is not None:
        drain.join(timeout=5)  # it ends at the pipe's end, once every browser process is gone
    if process.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            process.stderr.close()


def _bidi_value(remote: dict[str, Any]) -> Any:
    """A BiDi remote value as Python (strings, numbers, booleans, null, arrays)."""
    kind = remote["type"]
    if kind in ("undefined", "null"):
        return None
    if kind == "array":
        return [_bidi_value(item) for item in remote["value"]]
    return remote["value"]


@contextlib.contextmanager
def running(kind: type[Chromium] | type[Firefox], profile: Path) -> Iterator[Any]:
    """A started browser, closed afterwards whatever happens."""
    browser = kind(profile)
    try:
        yield browser
    finally:
        browser.close()
