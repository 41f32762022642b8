"""Headless Chromium over the DevTools protocol: open a page, collect console errors, measure
elements, take a screenshot. Chromium is Debian's `chromium` package (`.ci/run` installs it)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "Page", "open_page"]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1280,2400",
)


class Page:
    """One tab, driven over its DevTools websocket."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._next = 0
        self.errors: list[str] = []
        self.requests: list[str] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv(timeout=60))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.errors.append(json.dumps(params["exceptionDetails"])[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(json.dumps(params.get("args"))[:500])
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(params["entry"].get("text", "")[:500])
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])

    def settle(self, seconds: float = 0.5) -> None:
        """Read events for a moment (late console errors)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                self._event(json.loads(self._socket.recv(timeout=0.1)))
            except TimeoutError:
                continue

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def screenshot(self, path: Path) -> None:
        height = self.evaluate("document.documentElement.scrollHeight")
        clip = {"x": 0, "y": 0, "width": 1280, "height": min(int(height), 2400), "scale": 1}
        data = self.call("Page.captureScreenshot", format="png", clip=clip)["data"]
        path.write_bytes(base64.b64decode(data))


class open_page:
    """`with open_page(path) as page:` -- Chromium started fresh, stopped at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> Page:
        try:
            return self._start()
        except BaseException:
            self._stop()
            raise

    def _start(self) -> Page:
        from websockets.sync.client import connect

        assert CHROMIUM is not None
        self._connection: Any = None
        self._profile = tempfile.TemporaryDirectory(prefix="rewardsmith-chromium-")
        self._process = subprocess.Popen(
            [CHROMIUM, *_FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its helper processes die with it (see `_stop`)
        )
        port_file = Path(self._profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not start")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            target = next(t for t in json.load(r) if t["type"] == "page")
        self._connection = connect(target["webSocketDebuggerUrl"], max_size=None)
        self._socket = self._connection.__enter__()
        page = Page(self._socket)
        for domain in ("Runtime", "Log", "Page", "Network"):
            page.call(f"{domain}.enable")
        page.call("Page.navigate", url=self.path.resolve().as_uri())
        for _ in range(100):
            if page.evaluate("document.readyState") == "complete":
                break
            time.sleep(0.1)
        page.settle()
        return page

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if getattr(self, "_connection", None) is not None:
            self._connection.__exit__(None, None, None)
        if not hasattr(self, "_process"):
            return
        self._process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):  # helpers writing to the profile
            os.killpg(self._process.pid, signal.SIGKILL)  # would race its removal
        self._process.wait()
        self._profile.cleanup()
