"""The one exception type for mistakes a user can fix; the CLI prints it as one line."""

from __future__ import annotations


class MockgpuError(Exception):
    """A user-facing error: the message says what is wrong and, where possible, how to fix it.

    The CLI prints ``mockgpu: <message>`` and exits with ``exit_code`` (2 for bad input).
    """

    exit_code = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(MockgpuError):
    """Bad input in a file the user wrote (cluster spec, scheduler config, sharing config)."""

    exit_code = 2

    def __init__(self, source: str, path: str, message: str) -> None:
        self.source = source
        self.path = path
        self.detail = message
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {message}")
