"""``python -m mockgpu.control.kubelet.plugin_main device-plugin ...``: the ``mockgpu device-plugin`` command
(same parser and code, ``mockgpu.deviceplugin.command``) without importing the CLI's other subcommands, so a
node's plugin process starts in about half the time. Errors print one line, as the CLI does."""

from __future__ import annotations

import argparse
import sys

from mockgpu.deviceplugin import command
from mockgpu.errors import MockgpuError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mockgpu")
    parser.add_argument("-v", "--verbose", action="store_true")
    command.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except MockgpuError as exc:
        print(f"mockgpu: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
