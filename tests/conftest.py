"""Test-wide setup: this folder is on sys.path (pytest prepends a conftest's folder), so shared helpers such as
``polling`` and ``upstream_env`` import from any test package, whichever subset of tests runs."""
