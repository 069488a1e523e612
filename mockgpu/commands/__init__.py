"""Subcommands of ``mockgpu`` that belong to no single room (lab)."""
