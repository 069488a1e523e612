"""The scheduler log fed from a stream (kind: the kube-scheduler pod's log through the API) reads as the file."""

from __future__ import annotations

import json

from mockgpu.backends.kind.schedresults import SCHEDULER_SELECTOR
from mockgpu.backends.upstream.schedlog import BOUND, SCORED, TOTAL, SchedulerLog

POD = {"name": "p", "namespace": "default"}
LINES = [
    {"msg": "Attempting to schedule pod", "pod": POD},
    {"msg": SCORED, "pod": POD, "node": {"name": "gpu-0"}, "plugin": "NodeResourcesFit", "score": 50},
    {"msg": TOTAL, "pod": POD, "node": {"name": "gpu-0"}, "score": 50},
    {"msg": BOUND, "pod": POD, "node": {"name": "gpu-0"}},
]


def test_feed_in_pieces_cut_mid_line_gives_the_same_attempt(tmp_path):
    data = "".join(json.dumps(r) + "\n" for r in LINES).encode()
    path = tmp_path / "kube-scheduler.log"
    path.write_bytes(data)
    from_file = SchedulerLog(path)
    from_file.read()
    streamed = SchedulerLog()
    streamed.read()  # no file: nothing
    for i in range(0, len(data), 7):
        streamed.feed(data[i:i + 7])
    assert streamed.drain_finished() == from_file.drain_finished() == ["default/p"]
    assert streamed.attempt("default/p") == from_file.attempt("default/p")
    assert streamed.attempt("default/p").bound_to == "gpu-0"


def test_a_line_cut_short_by_a_dropped_stream_is_dropped():
    log = SchedulerLog()
    log.feed(json.dumps(LINES[0]).encode()[:10])
    log.feed(b"\n")  # the stream dropped
    log.feed(("".join(json.dumps(r) + "\n" for r in LINES)).encode())
    assert log.drain_finished() == ["default/p"]


def test_kind_scheduler_pod_is_found_by_kubeadms_static_pod_label():
    # kubeadm's manifest labels it component=kube-scheduler; its name ends with the Node's, which is a spec node's
    assert SCHEDULER_SELECTOR == "component=kube-scheduler"
