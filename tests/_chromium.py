"""Drive headless Chromium over the DevTools protocol on a pipe (``--remote-debugging-pipe``; no dependency).

The browser (started with posix_spawn: no Python code runs between fork and exec) reads commands on fd 3 and
writes replies/events on fd 4, each one JSON message ended by NUL.
:func:`load_page` opens a file:// URL in a fresh profile with the network components off and returns what a
user's console would show: uncaught exceptions, ``console.error``/``console.assert`` calls, error log entries,
and every request whose scheme is not ``file:`` or ``data:`` (the page must need no network).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import tempfile
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-dev-shm-usage",
         "--remote-debugging-pipe")


class _Child:
    """The browser's process: poll, wait with a deadline, kill."""

    def __init__(self, pid: int):
        self.pid, self.status = pid, None

    def poll(self):
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status

    def wait_or_kill(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.status = -signal.SIGKILL


class _Pipe:
    def __init__(self, proc, write_fd: int, read_fd: int):
        self.proc, self.w, self.r = proc, write_fd, read_fd
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from Chromium before the deadline")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe (exit code {self.proc.poll()})")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30.0) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        for m in self.events:
            if m.get("method") == method:
                return m
        while True:
            m = self._read_message(deadline)
            self.events.append(m)
            if m.get("method") == method:
                return m

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read_message(deadline))
        except TimeoutError:
            pass


def problems(events: list[dict]) -> list[str]:
    """The console errors, uncaught exceptions and non-local requests among the DevTools events."""
    out = []
    for m in events:
        meth, p = m.get("method"), m.get("params", {})
        if meth == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("exception: " + str(d.get("exception", {}).get("description") or d.get("text")))
        elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
        elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append("log error: " + str(p["entry"].get("text")))
        elif meth == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if not url.startswith(("file:", "data:")):
                out.append("network request: " + url)
    return out


def load_page(path: Path, evaluate: tuple[str, ...] = (), *, settle: float = 1.0, timeout: float = 60.0,
              screenshot: Path | None = None, width: int | None = None, height: int = 900) -> dict:
    """Open ``path`` headless; return {"problems": [...], "values": [result of each expression], "events": n}.

    ``width`` (CSS pixels) sets the viewport, as a browser window of that width would (default: Chromium's).
    """
    profile = tempfile.mkdtemp(prefix="reconrisk-chromium-")
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    # move the child's ends above 9, so that neither is already fd 3 or 4 when they are moved there
    for name in ("to_browser_r", "from_browser_w"):
        fd = locals()[name]
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        if name == "to_browser_r":
            to_browser_r = high
        else:
            from_browser_w = high

    # posix_spawn, not fork + preexec_fn: no Python code runs in the child (JAX may have threads running here);
    # its file actions put our ends on fds 3 and 4 (dup2 clears close-on-exec there; every other pipe end is
    # close-on-exec already)
    quiet = not os.environ.get("RECONRISK_CHROMIUM_DEBUG")
    actions = [(os.POSIX_SPAWN_DUP2, to_browser_r, 3), (os.POSIX_SPAWN_DUP2, from_browser_w, 4),
               (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
    if quiet:
        actions.append((os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0))
    pid = os.posix_spawn(CHROMIUM, [CHROMIUM, *FLAGS, f"--user-data-dir={profile}"], os.environ, file_actions=actions)
    proc = _Child(pid)
    os.close(to_browser_r)
    os.close(from_browser_w)
    pipe = _Pipe(proc, to_browser_w, from_browser_r)
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            pipe.send(f"{domain}.enable", session=session)
        if width is not None:
            pipe.send("Emulation.setDeviceMetricsOverride", {"width": int(width), "height": int(height),
                                                            "deviceScaleFactor": 1, "mobile": False}, session=session)
        pipe.events.clear()  # only what the page itself causes from here on
        pipe.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session)
        pipe.wait_event("Page.loadEventFired", timeout=timeout)
        pipe.drain(settle)
        values = []
        for expr in evaluate:
            r = pipe.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=session)
            if "exceptionDetails" in r:
                values.append({"exception": r["exceptionDetails"].get("text")})
            else:
                values.append(r.get("result", {}).get("value"))
        pipe.drain(0.3)
        if screenshot is not None:  # a full-page PNG, for looking at the page by eye
            import base64

            m = pipe.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
            shot = pipe.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": {
                "x": 0, "y": 0, "width": m["width"], "height": m["height"], "scale": 1}}, session=session)
            Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        out = {"problems": problems(pipe.events), "values": values, "events": len(pipe.events)}
        try:
            pipe.send("Browser.close", timeout=10)
        except Exception:
            pass
        return out
    finally:
        os.close(to_browser_w)
        os.close(from_browser_r)
        proc.wait_or_kill(20.0)
        shutil.rmtree(profile, ignore_errors=True)
