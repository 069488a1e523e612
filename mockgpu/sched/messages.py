"""The FailedScheduling message, built as upstream ``FitError.Error()`` (framework/types.go, v1.30+).

``0/<N> nodes are available: <histogram>.`` then `` <post-filter message>`` when preemption ran. The
histogram counts every reason of every rejected node, formats ``"<count> <reason>"`` and sorts those
strings lexicographically (Go ``sort.Strings``), so "10 Insufficient cpu" sorts before "2 Insufficient cpu".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from mockgpu.sched.framework import Status

NO_NODE_AVAILABLE = "0/{n} nodes are available"
MAX_EVENT_MESSAGE = 1024  # event messages longer than this are cut to 1020 bytes + " ..."


def histogram(statuses: Iterable[Status], absent: int = 0, absent_status: Status | None = None) -> list[str]:
    """Sorted ``"<count> <reason>"`` entries; ``absent`` nodes count ``absent_status``'s reasons."""
    counts: Counter[str] = Counter()
    for status in statuses:
        counts.update(status.reasons)
    if absent and absent_status is not None:
        for reason in absent_status.reasons:
            counts[reason] += absent
    return sorted(f"{count} {reason}" for reason, count in counts.items())


def fit_error(num_all_nodes: int, statuses: Mapping[str, Status], *, pre_filter_msg: str = "",
              post_filter_msg: str = "", absent_status: Status | None = None) -> str:
    """The whole message; ``statuses`` maps each rejected node to the status that rejected it."""
    msg = NO_NODE_AVAILABLE.format(n=num_all_nodes) + ":"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        absent = max(0, num_all_nodes - len(statuses))
        entries = histogram(statuses.values(), absent, absent_status)
        if entries:
            msg += f" {', '.join(entries)}."
    if post_filter_msg:
        msg += f" {post_filter_msg}"
    return msg


def truncate_event_message(message: str) -> str:
    """Events keep at most 1024 bytes of message, as the event recorder does."""
    raw = message.encode()
    if len(raw) <= MAX_EVENT_MESSAGE:
        return message
    return raw[:MAX_EVENT_MESSAGE - 4].decode(errors="ignore") + " ..."
