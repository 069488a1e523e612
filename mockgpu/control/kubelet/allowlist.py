"""Which commands a fake container may run, and where their executables are on this host.

The runtime refuses anything outside a small allowlist (the kit's own commands plus a few shell
tools). The check is on ``argv[0]`` (its base name, so ``/bin/sh`` and ``sh`` are the same) and,
for ``python``, on ``-m mockgpu...``. A container's ``PATH`` is a private ``bin`` directory holding
one link per allowlisted command (and, for ``python``, a gate script that only runs ``-m
mockgpu...``), so ``sh -c 'rm -rf x'`` fails with ``rm: not found``, as in a minimal image.

What makes the allowlist hold against other spellings (``/usr/bin/id``, ``exec``, ``env``,
``command -p``) is not this file but the sandbox (``sandbox.py``): only the executables listed
by ``executables()`` exist inside it.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

# The kit's commands and the shell tools a workload manifest typically uses.
DEFAULT_ALLOWLIST: tuple[str, ...] = (
    "mockgpu-workload",
    "nvidia-smi",
    "python",
    "python3",
    "env",
    "sleep",
    "sh",
    "bash",
    "echo",
    "cat",
    "true",
    "false",
)
PYTHON_NAMES = frozenset({"python", "python3"})
PYTHON_MODULE_PREFIX = "mockgpu"


# A shell script may call python only as `python -m mockgpu...`, like argv[0] itself.
_PYTHON_WRAPPER = """#!/bin/sh
case "$1 $2" in
  "-m mockgpu" | "-m mockgpu."*) exec "{exe}" "$@" ;;
esac
echo "python: only 'python -m mockgpu...' may run in the mockgpu runtime" >&2
exit 126
"""


class CommandRefused(Exception):
    """argv may not run here; the message is what the container's status shows."""


def venv_bin_dir() -> Path:
    """The directory holding this interpreter and the kit's console scripts."""
    return Path(sys.executable).parent


@dataclass
class CommandAllowlist:
    """Checks argv against the allowlist and resolves each name to a host executable."""

    names: tuple[str, ...] = DEFAULT_ALLOWLIST
    search_path: str = field(default_factory=lambda: os.pathsep.join([str(venv_bin_dir()), os.defpath]))

    def describe(self) -> str:
        return ", ".join(n if n not in PYTHON_NAMES else f"{n} -m {PYTHON_MODULE_PREFIX}..." for n in self.names)

    def check(self, argv: list[str]) -> None:
        """Raise CommandRefused unless argv may run."""
        if not argv:
            raise CommandRefused("no command specified")
        name = os.path.basename(argv[0])
        if name not in self.names:
            raise CommandRefused(f'exec: "{argv[0]}": command not in the mockgpu runtime allowlist ({self.describe()})')
        if name in PYTHON_NAMES:
            module = argv[2] if len(argv) > 2 and argv[1] == "-m" else ""
            if not (module == PYTHON_MODULE_PREFIX or module.startswith(PYTHON_MODULE_PREFIX + ".")):
                raise CommandRefused(
                    f'exec: "{argv[0]}": only "{name} -m {PYTHON_MODULE_PREFIX}..." may run in the mockgpu runtime'
                )

    def resolve(self, name: str) -> str | None:
        """Host path of an allowlisted command (python is always this interpreter)."""
        if name in PYTHON_NAMES:
            return sys.executable
        return shutil.which(name, path=self.search_path)

    def host_argv(self, argv: list[str]) -> list[str]:
        """argv with argv[0] replaced by the host executable; CommandRefused if absent."""
        self.check(argv)
        exe = self.resolve(os.path.basename(argv[0]))
        if exe is None:
            raise CommandRefused(f'exec: "{argv[0]}": executable file not found in $PATH')
        return [exe, *argv[1:]]

    def executables(self) -> dict[str, str]:
        """Host path of every allowlisted command found on this host (what the sandbox shows)."""
        found = {name: self.resolve(name) for name in self.names}
        if any(n in PYTHON_NAMES for n in found) and "sh" not in found:
            found["sh"] = self.resolve("sh")  # the python gate is a shell script
        return {n: p for n, p in found.items() if p is not None}

    def populate_bin_dir(self, bin_dir: Path) -> Path:
        """One entry per allowlisted command found on this host: a symlink to it, or for python a
        gate script (``-m mockgpu...`` only); returns bin_dir."""
        bin_dir.mkdir(parents=True, exist_ok=True)
        for name in self.names:
            exe = self.resolve(name)
            if exe is None:
                continue
            entry = bin_dir / name
            entry.unlink(missing_ok=True)
            if name in PYTHON_NAMES:
                entry.write_text(_PYTHON_WRAPPER.format(exe=exe))
                entry.chmod(0o755)
            else:
                entry.symlink_to(exe)
        return bin_dir
