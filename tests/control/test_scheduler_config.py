"""Which scheduler configuration a cluster runs, and the CLI's early check of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockgpu.cli import main
from mockgpu.config import load_spec
from mockgpu.control.scheduler import load_scheduler_config
from mockgpu.errors import ConfigError

from .conftest import PROFILES, SEED

BAD = ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
       "- schedulerName: x\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
       "        type: Fastest\n")
BAD_PATH = "profiles[0].pluginConfig[0].args.scoringStrategy.type"


@pytest.mark.parametrize(("spec", "override", "profiles"), [
    (SEED, None, ["default-scheduler"]),
    (PROFILES, None, ["default-scheduler", "bin-packing", "spreading"]),
    (SEED, "clusters/scheduler/binpack.yaml", ["bin-packing"]),
    (PROFILES, "clusters/scheduler/spread.yaml", ["spreading"]),
    (None, None, ["default-scheduler"]),
], ids=["seed-defaults", "spec-file", "override", "override-wins", "no-spec"])
def test_config_source(spec, override, profiles):
    root = Path(__file__).resolve().parents[2]
    cfg = load_scheduler_config(load_spec(spec) if spec else None, root / override if override else None)
    assert list(cfg.profiles) == profiles


def test_bad_config_names_the_field(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    with pytest.raises(ConfigError) as err:
        load_scheduler_config(load_spec(SEED), bad)
    assert err.value.path == BAD_PATH and str(bad) in str(err.value)


def test_missing_file(tmp_path: Path):
    with pytest.raises(ConfigError, match="no such file"):
        load_scheduler_config(load_spec(SEED), tmp_path / "absent.yaml")


def test_mockgpu_up_rejects_a_bad_config_before_anything_starts(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("MOCKGPU_HOME", str(tmp_path / "home"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    assert main(["up", "--spec", str(SEED), "--scheduler-config", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mockgpu: ") and BAD_PATH in err[0]
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").iterdir())
