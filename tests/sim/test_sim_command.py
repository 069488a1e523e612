"""``mockgpu sim``: JSON keys, the table, --policy all, and one-line errors with exit 2."""

from __future__ import annotations

import json

import pytest
from sim_builders import write_trace

from mockgpu.cli import main

KEYS = {"policy", "arrived_percent", "seeds", "gpu_allocation_percent", "gpu_allocation_percent_std",
        "fragmentation_percent", "fragmentation_percent_std", "unplaced_pods", "unplaced_pods_std"}


def sim(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["sim", "--quiet", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_json_has_the_documented_keys(tmp_path, capsys):
    rc, out, _ = sim(capsys, "--trace-dir", str(write_trace(tmp_path / "t")), "--policy", "fgd", "--arrived", "90",
                     "--seeds", "3", "--json")
    data = json.loads(out)
    assert rc == 0 and KEYS <= set(data)
    assert (data["policy"], data["arrived_percent"], data["seeds"]) == ("fgd", 90.0, 3)
    assert data["seed_values"] == [42, 43, 44]
    assert 0 <= data["gpu_allocation_percent"] <= 90 and data["total_gpus"] == 15


def test_policy_all_prints_a_list_in_registry_order(tmp_path, capsys):
    from mockgpu.sim.policies import POLICY_NAMES

    rc, out, _ = sim(capsys, "--trace-dir", str(write_trace(tmp_path / "t")), "--policy", "all", "--seeds", "1",
                     "--json", "--curve", "50")
    data = json.loads(out)
    assert rc == 0 and [d["policy"] for d in data] == list(POLICY_NAMES)
    assert all(KEYS <= set(d) for d in data)
    assert [p["arrived_percent"] for p in data[0]["curve"]] == [0.0, 50.0, 100.0]


def test_table_on_the_shipped_trace(capsys):
    rc, out, _ = sim(capsys, "--policy", "best-fit", "--arrived", "10", "--seeds", "1")
    assert rc == 0 and "GPU alloc %" in out and "best-fit" in out and "1213 nodes, 6212 GPUs" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "first-fit"], "unknown policy 'first-fit'"),
    (["--arrived", "-5"], "--arrived must be between 0 and 1000"),
    (["--seeds", "0"], "--seeds must be between 1 and 1000"),
    (["--curve", "0"], "--curve must be > 0"),
    (["--trace-dir", "/nonexistent/mockgpu"], "not a directory"),
], ids=["unknown-policy", "negative-load", "no-seeds", "zero-curve-step", "bad-trace-dir"])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    rc, out, err = sim(capsys, *args)
    assert rc == 2 and out == "" and message in err and err.count("\n") == 1 and err.startswith("mockgpu: ")
