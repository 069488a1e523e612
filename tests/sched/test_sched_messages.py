"""FailedScheduling message format (FitError.Error() of kube-scheduler v1.30+)."""

from __future__ import annotations

import pytest

from mockgpu.sched.framework import Code, Status
from mockgpu.sched.messages import fit_error, truncate_event_message


def st(*reasons, code=Code.UNSCHEDULABLE):
    return Status(code, reasons)


MESSAGE_ROWS = [
    ("one reason on every node", 4, {f"n{i}": st("Insufficient nvidia.com/gpu") for i in range(4)}, "", "",
     "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."),
    # each reason of a node counts: cpu and gpu both listed
    ("several reasons per node", 2, {"a": st("Insufficient cpu", "Insufficient nvidia.com/gpu"),
                                     "b": st("Insufficient cpu", "Insufficient nvidia.com/gpu")}, "", "",
     "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient nvidia.com/gpu."),
    # sort.Strings on "<count> <reason>": "10 ..." < "2 ..." lexicographically
    ("histogram sorted as strings, not by count", 12,
     {**{f"c{i}": st("Insufficient memory") for i in range(10)}, "x": st("Insufficient cpu"),
      "y": st("Insufficient cpu")}, "", "",
     "0/12 nodes are available: 10 Insufficient memory, 2 Insufficient cpu."),
    ("post-filter message appended", 1, {"a": st("Too many pods")}, "",
     "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
     "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: "
     "1 No preemption victims found for incoming pod."),
    ("pre-filter message replaces the histogram", 3, {}, "pod has unbound immediate PersistentVolumeClaims",
     "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
     "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are "
     "available: 3 Preemption is not helpful for scheduling."),
    ("no nodes at all", 0, {}, "", "", "0/0 nodes are available:"),
]


@pytest.mark.parametrize("n,statuses,pre,post,want", [r[1:] for r in MESSAGE_ROWS], ids=[r[0] for r in MESSAGE_ROWS])
def test_fit_error(n, statuses, pre, post, want):
    assert fit_error(n, statuses, pre_filter_msg=pre, post_filter_msg=post) == want


def test_absent_nodes_get_the_absent_status():
    # preemption: nodes missing from the map count "Preemption is not helpful for scheduling"
    absent = st("Preemption is not helpful for scheduling", code=Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    msg = fit_error(3, {"a": st("No preemption victims found for incoming pod")}, absent_status=absent)
    assert msg == ("0/3 nodes are available: 1 No preemption victims found for incoming pod, "
                   "2 Preemption is not helpful for scheduling.")


def test_event_message_truncated_to_1024_bytes():
    long = "x" * 2000
    out = truncate_event_message(long)
    assert len(out.encode()) == 1024 and out.endswith(" ...")
    assert truncate_event_message("short") == "short"
