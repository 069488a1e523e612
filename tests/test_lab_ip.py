"""``mockgpu lab --ip 0.0.0.0`` really serves beyond loopback -- on this machine's own non-loopback address, as a
published container port does -- and still wants the token there: the API answers 403 without it, 200 with it."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(120)


def own_address() -> str | None:
    """This machine's address on its default route (a UDP connect sends nothing), unless that is loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the route
        except OSError:
            return None
        addr = s.getsockname()[0]
    return None if addr.startswith("127.") or addr == "0.0.0.0" else addr


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.skipif(importlib.util.find_spec("jupyterlab") is None, reason="JupyterLab not installed (the lab extra)")
def test_lab_on_every_address_answers_there_only_with_the_token(tmp_path):
    addr = own_address()
    if addr is None:
        pytest.skip("this machine has no non-loopback IPv4 address to reach the server on")
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        port = s.getsockname()[1]
    token = "t" + os.urandom(12).hex()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_TOKEN": token, "HOME": str(tmp_path),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    proc = subprocess.Popen([sys.executable, "-m", "mockgpu.cli", "lab", "--ip", "0.0.0.0", "--port", str(port),
                             "--no-browser"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        head = [proc.stdout.readline() for _ in range(7)]
        assert f"http://127.0.0.1:{port}/lab/tree/01-" in "".join(head)
        assert "the token is still required" in "".join(head)
        base = f"http://{addr}:{port}/api/status"
        deadline = time.monotonic() + 60
        while True:
            try:
                code = status(base)
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline and proc.poll() is None, "JupyterLab did not start listening"
                time.sleep(0.5)
        assert code == 403  # reachable on the machine's own address, and refused without the token
        assert status(f"{base}?token={token}") == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
