"""``mockgpu doctor``: one line per tool and per backend, the sandbox probe's verdict among them, exit 0 whatever
it finds -- here (bubblewrap works: the embedded backend is ready) and on a machine where nothing is there (a PATH
whose only tool is a bwrap refused by Docker's seccomp, no Go, no Chromium, no upstream binaries)."""

from __future__ import annotations

from pathlib import Path

from mockgpu.cli import main
from mockgpu.commands import doctor
from mockgpu.control.kubelet import sandbox, sandboxprobe

SECCOMP_BWRAP = """#!/bin/sh
case "$1" in --version) echo "bubblewrap 0.8.0"; exit 0;; --help) exit 0;; esac
echo "bwrap: Creating new namespace failed: Operation not permitted" >&2
exit 1
"""


def rows(out: str) -> tuple[dict[str, str], dict[str, str]]:
    """The tools' and the backends' ``name -> "<verdict> <text>"`` (the indented lines under each heading)."""
    tools: dict[str, str] = {}
    backends: dict[str, str] = {}
    section = tools
    for line in out.splitlines():
        if line.startswith("backends"):
            section = backends
        elif line.startswith("  "):
            name, rest = line.strip().split(None, 1)
            section[name] = rest
    return tools, backends


def test_doctor_here_reports_the_sandbox_and_every_backend(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    tools, backends = rows(out)
    assert set(tools) == {"sandbox", "docker", "go", "kind", "kubectl", "upstream", "chromium"}
    assert set(backends) == {"embedded", "upstream", "kind", "kubeconfig"}
    assert tools["sandbox"].startswith("ok  sandbox: bubblewrap ")  # bootstrap installs bubblewrap
    assert backends["embedded"].startswith("ready needs the workload sandbox")


def test_doctor_where_nothing_works_still_exits_0_and_says_why(tmp_path: Path, monkeypatch, capsys):
    path = tmp_path / "path"
    path.mkdir()
    (path / "bwrap").write_text(SECCOMP_BWRAP)
    (path / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", str(path))
    monkeypatch.setenv("MOCKGPU_UPSTREAM_BIN", str(tmp_path / "no-binaries"))
    monkeypatch.setattr(doctor, "GO_FALLBACK", str(tmp_path / "no-go"))
    monkeypatch.setattr(doctor, "CHROMIUM_PATH", str(tmp_path / "no-chromium"))
    monkeypatch.setattr(sandboxprobe, "in_container", lambda: True)
    # nowhere to fall back to either (where uid 65532 or Landlock could run, the probe would use them)
    monkeypatch.setattr(sandbox, "LAYERS", (sandbox.BWRAP,))
    assert main(["doctor"]) == 0
    got, backends = rows(capsys.readouterr().out)
    assert got["sandbox"].startswith("--  no pod can start here: the workload sandbox is unavailable (bwrap: "
                                     "Creating new namespace failed: Operation not permitted)")
    assert "seccomp=unconfined" in got["sandbox"]
    assert got["docker"].startswith("--  Docker is not installed")
    assert got["go"].startswith("--  Go is not installed")
    assert got["kind"].startswith("--  `kind` is not on PATH")
    assert got["kubectl"].startswith("--  `kubectl` is not on PATH")
    assert got["upstream"].startswith("--  the upstream backend needs") and "no-binaries" in got["upstream"]
    assert got["chromium"].startswith("--  no ")
    for backend in ("embedded", "upstream", "kind", "kubeconfig"):
        assert backends[backend].startswith("no    needs "), backends[backend]
    assert "no pod can start here" in backends["embedded"]
