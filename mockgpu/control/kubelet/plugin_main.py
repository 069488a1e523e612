"""``python -m mockgpu.control.kubelet.plugin_main device-plugin|dra-driver ...``: the ``mockgpu device-plugin``
and ``mockgpu dra-driver`` commands (same parsers and code, ``mockgpu.deviceplugin.command``,
``mockgpu.dra.command``) without importing the CLI's other subcommands, so a node's plugin processes start in
about half the time. Errors print one line, as the CLI does.

The plugin also ends when its kubelet's process does, even one killed with SIGKILL (which cannot clean
up): it watches its parent and SIGTERMs itself once reparented, like a DaemonSet pod whose node went away.
It makes itself non-dumpable first (``PR_SET_DUMPABLE 0``): where pods run with the cluster's own uid (the
sandbox's ``landlock`` layer) a workload may not ptrace it nor read its ``/proc/<pid>/environ`` or ``mem``
(Landlock's ptrace rule already refuses that; this holds without it)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from mockgpu.control.kubelet.confine import make_nondumpable
from mockgpu.deviceplugin import command
from mockgpu.dra import command as dra_command
from mockgpu.errors import MockgpuError


def _exit_with_parent(interval: float = 0.5) -> None:
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(interval)
        os.kill(os.getpid(), signal.SIGTERM)  # the plugin's own handler shuts it down cleanly

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mockgpu")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    command.add_parser(sub)
    dra_command.add_parser(sub)
    args = parser.parse_args(argv)
    make_nondumpable()
    _exit_with_parent()
    try:
        return int(args.func(args) or 0)
    except MockgpuError as exc:
        print(f"mockgpu: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
