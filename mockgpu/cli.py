"""The ``mockgpu`` command. Each subcommand lives in the room that owns it and registers itself
through an ``add_parser(subparsers)`` function; this module only dispatches and turns
``MockgpuError`` into one line on stderr."""

from __future__ import annotations

import argparse
import importlib
import sys

import mockgpu
from mockgpu.errors import MockgpuError
from mockgpu.helptext import describe

# Modules that provide `add_parser(subparsers)`; each sets `func` on its parser.
COMMAND_MODULES: list[str] = [
    "mockgpu.commands.lab",
    "mockgpu.deviceplugin.command",
    "mockgpu.dra.command",
    "mockgpu.sim.command",
    "mockgpu.commands.cluster",
    "mockgpu.commands.fault",
    "mockgpu.commands.doctor",
    "mockgpu.control.kubelet.publish_command",
    "mockgpu.commands.metrics",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mockgpu", description=describe(mockgpu.__doc__))
    parser.add_argument("-v", "--verbose", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        rc = args.func(args)
    except MockgpuError as exc:
        if args.verbose:
            raise
        print(f"mockgpu: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
