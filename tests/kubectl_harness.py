"""kubectl as a user runs it against a test cluster: one runner per kubeconfig, JSON reads and events."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

KUBECTL = shutil.which("kubectl")

Kubectl = Callable[..., str]


def kubectl_runner(kubeconfig: Path, timeout: float = 90) -> Kubectl:
    """``run(*args, stdin=None, check=True)``: stdout, asserting success; with ``check=False`` stdout+stderr."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    default_timeout = timeout

    def run(*args: str, stdin: str | None = None, check: bool = True, timeout: float = default_timeout) -> str:
        r = subprocess.run([str(KUBECTL), *args], input=stdin, capture_output=True, text=True, env=env,
                           timeout=timeout)
        if check:
            assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
        return r.stdout + r.stderr if not check else r.stdout

    return run


def get(kubectl: Kubectl, *what: str) -> dict:
    return json.loads(kubectl("get", *what, "-o", "json"))


def events(kubectl: Kubectl, kind: str, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the object's events, oldest first."""
    items = get(kubectl, "events", "--field-selector", f"involvedObject.kind={kind},involvedObject.name={name}")
    items = sorted(items["items"], key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"]))
    return [(e["type"], e["reason"], e["message"]) for e in items]
