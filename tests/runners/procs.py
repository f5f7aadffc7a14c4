"""Real uvicorn processes for the durable tests: start on a free 127.0.0.1 port, SIGKILL, restart."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from agora_agent.client.frames import parse_sse_text

ROOT = Path(__file__).resolve().parents[2]
USER = {"x-actor-id": "alice", "x-actor-role": "user"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class AppProcess:
    """One uvicorn process serving `tests.runners.durable_app:create_app`."""

    env: dict[str, str]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    output: list[str] = field(default_factory=list)
    _drain: threading.Thread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> AppProcess:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "tests.runners.durable_app:create_app",
                "--factory",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **self.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        ready = threading.Event()

        def drain(proc: subprocess.Popen[bytes]) -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                self.output.append(raw.decode(errors="replace"))
            ready.set()

        self._drain = threading.Thread(target=drain, args=(self.process,), daemon=True)
        self._drain.start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("the app did not start:\n" + "".join(self.output))
            try:
                if httpx2.get(f"{self.base}/agent/threads", headers=USER, timeout=1).status_code == 200:
                    return self
            except httpx2.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the app did not answer in time:\n" + "".join(self.output))

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, exactly like a crash."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self._drain is not None:
            self._drain.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def chat(self, message: str) -> str:
        """Start a run; read only its meta frame (disconnecting never cancels a run)."""
        with (
            httpx2.Client(base_url=self.base, timeout=10) as client,
            client.stream("POST", "/agent/chat", json={"message": message}, headers=USER) as response,
        ):
            assert response.status_code == 200, response.read()
            for line in response.iter_lines():
                if line.startswith("data: ") and "runId" in line:
                    return str(json.loads(line[6:])["runId"])
        raise AssertionError("no meta frame")

    def stream(
        self, run_id: str, *, last_event_id: int | None = None, timeout: float = 30
    ) -> list[tuple[str, str, str]]:
        """Re-attach and read the stream to its end: [(event, data, id)]."""
        headers = dict(USER)
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        response = httpx2.get(f"{self.base}/agent/chat/{run_id}/stream", headers=headers, timeout=timeout)
        assert response.status_code == 200, response.text
        return parse_sse_text(response.text)

    def post(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        return httpx2.post(f"{self.base}{path}", json=body, headers=USER, timeout=10)


def wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} never appeared")
        time.sleep(0.02)


def text_of(events: list[tuple[str, str, str]]) -> str:
    return "".join(json.loads(data).get("delta", "") for event, data, _id in events if event == "message")


def tool_statuses(events: list[tuple[str, str, str]]) -> list[str]:
    return [json.loads(data)["status"] for event, data, _id in events if event == "tool"]
