"""Every parser's description is its docstring's whole first paragraph, not the paragraph's first line."""

from __future__ import annotations

import pytest

from mockgpu import workloads
from mockgpu.cli import main
from mockgpu.helptext import describe


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        if argv[0] == "mockgpu-workload":
            workloads.build_parser().parse_args(argv[1:])
        else:
            main(argv)
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # undo argparse's line wrapping


@pytest.mark.parametrize(("argv", "description"), [
    (["--help"], "mockgpu: a mock-GPU Kubernetes testbed and teaching kit."),
    (["device-plugin", "--help"], "mockgpu device-plugin: run the device plugin of one spec node (what the "
                                  "DaemonSet runs), or --list what it would advertise."),
    (["gpu-state-publisher", "--help"], "mockgpu gpu-state-publisher: publish one node's GPU state where a real "
                                        "kubelet runs (the kind DaemonSet's second container), in the same ConfigMap "
                                        "shape as the embedded kubelet."),
    (["mockgpu-workload", "--help"], "mockgpu-workload: the GPU programs the labs run in pods, written against the "
                                     "fake CUDA API."),
    (["doctor", "--help"], "mockgpu doctor: what this machine supports -- the workload sandbox (the probe mockgpu up "
                           "runs), Docker, Go, kind, kubectl, the upstream binaries and Chromium -- and what each "
                           "backend would need here."),
    (["fault", "--help"], "mockgpu fault inject|clear|list: inject GPU faults (Xid events) into a running cluster's "
                          "nodes, as the kernel driver would report them, in host-side state its pods cannot write."),
], ids=["mockgpu", "device-plugin", "gpu-state-publisher", "mockgpu-workload", "doctor", "fault"])
def test_help_prints_the_whole_description(argv, description, capsys):
    assert description in _help(argv, capsys)


@pytest.mark.parametrize(("doc", "want"), [
    ("``x``: does y,\n    and z.\n\n    More.", "x: does y, and z."),
    ("One line.", "One line."),
    ("\n  Leading blank.\n  Then more.\n", "Leading blank. Then more."),
    (None, ""),
], ids=["two-lines", "one-line", "leading-newline", "no-docstring"])
def test_describe_takes_the_first_paragraph(doc, want):
    assert describe(doc) == want
