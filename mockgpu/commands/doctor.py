"""``mockgpu doctor``: what this machine supports -- the workload sandbox (the probe ``mockgpu up`` runs), Docker,
Go, kind, kubectl, the upstream binaries and Chromium -- and what each backend would need here.

It is a report: it changes nothing and exits 0 whatever it finds; each line says what was found, or what is
missing and how to get it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess

from mockgpu.backends.base import BACKENDS, SANDBOXED_BACKENDS, get_backend
from mockgpu.backends.common.run import Runner, kubectl_check
from mockgpu.backends.kind.preflight import docker_check, kind_check
from mockgpu.control.kubelet.sandboxprobe import Verdict, probe
from mockgpu.errors import MockgpuError
from mockgpu.helptext import describe

GO_FALLBACK = "/usr/local/go/bin/go"  # Go's own install folder (scripts/upstream-build looks there too)
CHROMIUM_PATH = "/usr/bin/chromium"  # Debian's chromium, which tests/browser drives through Playwright
NEEDS = {
    "embedded": "the workload sandbox (bubblewrap; where namespaces are refused, Landlock or a uid switch)",
    "upstream": "the workload sandbox and the upstream binaries (Go, then ./scripts/upstream-build)",
    "kind": "a reachable Docker engine, kind and kubectl",
    "kubeconfig": "kubectl and a running cluster's kubeconfig whose nodes can pull the mockgpu image",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("doctor", help="report what this machine supports (sandbox, Docker, Go, kind, ...) and "
                                      "what each backend needs; changes nothing, exits 0",
                       description=describe(__doc__))
    p.set_defaults(func=run)


def go_line() -> tuple[bool, str]:
    go = shutil.which("go") or (GO_FALLBACK if os.access(GO_FALLBACK, os.X_OK) else None)
    if go is None:
        return False, "Go is not installed (needed only to build the upstream binaries: https://go.dev/doc/install)"
    try:
        out = subprocess.run([go, "version"], capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{go} does not run: {exc}"
    return True, out[2] if len(out) > 2 else f"{go} (version unknown)"


def chromium_line() -> tuple[bool, str]:
    if not os.access(CHROMIUM_PATH, os.X_OK):
        return False, f"no {CHROMIUM_PATH} (browser tests skip; Debian/Ubuntu: apt-get install chromium)"
    return True, f"{CHROMIUM_PATH} (browser tests)"


def backend_line(name: str, sandbox: Verdict) -> tuple[bool, str]:
    """Whether backend ``name`` would work here, and what it needs (or lacks)."""
    try:
        problem = get_backend(name).is_available()
    except MockgpuError as exc:
        problem = str(exc)
    except ImportError as exc:  # e.g. the device-plugin image, which carries no control plane
        problem = f"not installed in this environment ({exc})"
    if problem is None and name in SANDBOXED_BACKENDS and not sandbox.ok:
        problem = sandbox.line
    return problem is None, f"needs {NEEDS.get(name, '?')}" + (f" -- {problem}" if problem else "")


def upstream_line() -> tuple[bool, str]:
    """The upstream binaries, through the backend (loaded only here: the CLI must import in the device-plugin
    image, which carries no control plane)."""
    try:
        backend = get_backend("upstream")
    except ImportError as exc:
        return False, f"the control plane is not installed in this environment ({exc})"
    problem = backend.is_available()
    return problem is None, problem or "kube-apiserver & co. built (scripts/upstream-build)"


def report(runner: Runner | None = None) -> list[str]:
    """The report's lines."""
    r = runner or Runner()
    sandbox = probe()
    docker = docker_check(r)
    tools: list[tuple[str, bool, str]] = [
        ("sandbox", sandbox.ok, sandbox.line),
        ("docker", docker.ok, docker.message),
        ("go", *go_line()),
    ]
    for check in (kind_check(r), kubectl_check(r)):
        tools.append((check.name, check.ok, check.message))
    tools.append(("upstream", *upstream_line()))
    tools.append(("chromium", *chromium_line()))
    lines = ["what this machine supports:"]
    lines += [f"  {name:<10} {'ok' if ok else '--':<3} {text}" for name, ok, text in tools]
    lines.append("backends (mockgpu up --backend NAME):")
    for name in BACKENDS:
        ok, text = backend_line(name, sandbox)
        lines.append(f"  {name:<10} {'ready' if ok else 'no':<5} {text}")
    return lines


def run(args: argparse.Namespace) -> int:
    print("\n".join(report()), flush=True)
    return 0
