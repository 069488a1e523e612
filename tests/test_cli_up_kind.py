"""`mockgpu up --backend kind` through the CLI: dry run renders without Docker; a real run fails fast."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mockgpu.cli import main

WORKSHOP = str(Path(__file__).resolve().parents[1] / "clusters" / "workshop.yaml")


def test_dry_run_prints_one_yaml_stream_and_nothing_else(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker, kind or kubectl: a dry run must not need them
    assert main(["up", "--backend", "kind", "--dry-run", "--spec", WORKSHOP]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert docs[0]["kind"] == "Cluster"
    assert [n["role"] for n in docs[0]["nodes"]] == ["control-plane", "worker", "worker"]  # the spec's 3 nodes
    assert {d["kind"] for d in docs[1:]} >= {"Namespace", "DaemonSet", "ConfigMap"}


def test_without_docker_up_fails_fast_naming_docker(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    rc = main(["up", "--backend", "kind", "--spec", WORKSHOP])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and "Docker" in err[0]
