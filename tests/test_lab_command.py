"""``mockgpu lab``'s choices, without launching Jupyter: which lab opens, which port, the command line, and
which interpreter the notebooks' ``python3`` kernel runs. (tests/browser runs the real command in Chromium.)"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from mockgpu.cli import build_parser
from mockgpu.commands import lab
from mockgpu.errors import MockgpuError


@pytest.fixture(autouse=True)
def _restore_env(monkeypatch):
    """ensure_kernel sets JUPYTER_PREFER_ENV_PATH for the server it launches; undo that after each test."""
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "1")


def _labs(tmp_path: Path, names: list[str]) -> Path:
    d = tmp_path / "labs"
    d.mkdir()
    for n in names:
        (d / n).write_text("{}")
    return d


@pytest.mark.parametrize(("names", "wanted", "expected"), [
    (["02-b.ipynb", "01-a.ipynb", "08-c.ipynb"], None, "01-a.ipynb"),
    (["08-c.ipynb"], None, "08-c.ipynb"),
    (["01-a.ipynb", "08-c.ipynb"], "8", "08-c.ipynb"),
    (["01-a.ipynb", "08-c.ipynb"], "08", "08-c.ipynb"),
    (["01-a.ipynb", "08-c.ipynb"], "08-c", "08-c.ipynb"),
    (["01-a.ipynb", "08-c.ipynb"], "08-c.ipynb", "08-c.ipynb"),
    ([], None, None),
], ids=["lowest-number", "only-lab", "number", "two-digits", "stem", "file-name", "no-labs"])
def test_pick_lab(tmp_path, names, wanted, expected):
    picked = lab.pick_lab(_labs(tmp_path, names), wanted)
    assert (picked.name if picked else None) == expected


@pytest.mark.parametrize("wanted", ["9", "nope"], ids=["missing-number", "missing-name"])
def test_pick_lab_unknown_is_a_one_line_error(tmp_path, wanted):
    with pytest.raises(MockgpuError, match=r"no lab .* \(labs: 01-a.ipynb\)") as exc:
        lab.pick_lab(_labs(tmp_path, ["01-a.ipynb"]), wanted)
    assert exc.value.exit_code == 2


def test_default_labs_dir_is_the_checkouts_labs():
    assert lab.labs_dir(None) == (Path(__file__).resolve().parents[1] / "labs")


def test_missing_labs_dir_is_a_one_line_error(tmp_path):
    with pytest.raises(MockgpuError, match="no labs folder"):
        lab.labs_dir(str(tmp_path / "nope"))


def test_command_line_opens_the_lab_on_loopback_with_this_python(tmp_path):
    d = _labs(tmp_path, ["01-a.ipynb"])
    argv = lab.build_argv(d, d / "01-a.ipynb", 8899, no_browser=True, as_root=False)
    assert argv[:3] == [sys.executable, "-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={d}" in argv
    assert "--LabApp.default_url=/lab/tree/01-a.ipynb" in argv
    for flag in ("--ServerApp.ip=127.0.0.1", "--ServerApp.port=8899", "--ServerApp.port_retries=0", "--no-browser"):
        assert flag in argv
    assert "--allow-root" not in argv and not any("token" in a.lower() for a in argv)  # token only in the env


def test_autosave_is_off_through_an_app_settings_folder_only_this_command_passes(tmp_path):
    d = lab.settings_dir(str(tmp_path))
    assert json.loads((d / "overrides.json").read_text()) == {
        "@jupyterlab/docmanager-extension:plugin": {"autosave": False}}
    argv = lab.build_argv(tmp_path, None, 8888, no_browser=True, as_root=False, settings=d)
    assert f"--LabApp.app_settings_dir={d}" in argv
    assert not any("app_settings_dir" in a for a in lab.build_argv(tmp_path, None, 8888, no_browser=True,
                                                                   as_root=False))


def test_command_line_without_labs_or_browser_flag_as_root(tmp_path):
    argv = lab.build_argv(tmp_path, None, 8888, no_browser=False, as_root=True)
    assert "--LabApp.default_url=/lab" in argv and "--allow-root" in argv and "--no-browser" not in argv


def test_cli_parses_lab_arguments():
    args = build_parser().parse_args(["lab", "08", "--port", "9000", "--no-browser"])
    assert (args.open, args.port, args.no_browser, args.func) == ("08", 9000, True, lab.run)


def test_taken_port_asked_for_is_an_error_and_default_moves_on(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        with pytest.raises(MockgpuError, match=f"port {taken} is in use"):
            lab.choose_port(taken)
        monkeypatch.setattr(lab, "DEFAULT_PORT", taken)
        other = lab.choose_port(None)
        assert other != taken and lab.port_is_free(other)


@pytest.mark.parametrize("port", [0, 70000], ids=["zero", "too-big"])
def test_port_out_of_range_is_an_error(port):
    with pytest.raises(MockgpuError, match="is not a TCP port"):
        lab.choose_port(port)


def test_python3_kernel_here_runs_this_environments_python():
    """The real resolution in this environment: no install needed, the kernel is our interpreter."""
    def must_not_install():
        raise AssertionError("installed a kernel spec although the environment's one resolves")

    argv = lab.ensure_kernel(install=must_not_install)
    assert lab.in_this_env(argv) and argv[1:3] == ["-m", "ipykernel_launcher"]


def _kernelspec(root: Path, python: str) -> None:
    d = root / "kernels" / "python3"
    d.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Python 3",
            "language": "python"}
    (d / "kernel.json").write_text(json.dumps(spec))


def test_foreign_python3_kernel_is_fixed_by_installing_or_reported(tmp_path, monkeypatch):
    """A ``python3`` kernel spec that runs another interpreter (here put first with JUPYTER_PATH) wins
    over the environment's: ensure_kernel installs, re-checks, and says so in one line if it still loses."""
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    _kernelspec(tmp_path, "/usr/bin/python3")
    calls = []
    with pytest.raises(MockgpuError, match=r"runs /usr/bin/python3, not .*JUPYTER_PATH"):
        lab.ensure_kernel(install=lambda: calls.append("install"))
    assert calls == ["install"]
    # an install that does take effect (here: it rewrites the winning spec) is accepted
    argv = lab.ensure_kernel(install=lambda: _kernelspec(tmp_path, sys.executable))
    assert argv[0] == sys.executable


def test_ip_defaults_to_loopback_and_is_passed_to_jupyter(tmp_path):
    assert build_parser().parse_args(["lab"]).ip == "127.0.0.1"
    args = build_parser().parse_args(["lab", "--ip", "0.0.0.0"])
    assert args.ip == "0.0.0.0"
    argv = lab.build_argv(tmp_path, None, 8888, no_browser=True, as_root=True, ip=lab.check_ip(args.ip))
    assert "--ServerApp.ip=0.0.0.0" in argv and "--ServerApp.ip=127.0.0.1" not in argv
    assert not any("token" in a.lower() for a in argv)  # the token still goes in the environment only


def test_ip_help_says_token_auth_stays_on(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["lab", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--ip ADDR" in text and "default 127.0.0.1" in text
    assert "Token authentication stays on wherever it listens" in text


@pytest.mark.parametrize(("ip", "host", "note"), [
    ("127.0.0.1", "127.0.0.1", ""),
    ("0.0.0.0", "127.0.0.1", "Listening on every address of this machine"),
    ("::", "[::1]", "Listening on every address of this machine"),
], ids=["loopback", "every-v4", "every-v6"])
def test_printed_url_and_note_for_the_address(ip, host, note):
    assert lab.url_host(ip) == host
    assert lab.reach_note(ip).startswith(note)
    if note:
        assert "the token is still required" in lab.reach_note(ip)


@pytest.mark.parametrize(("ip", "message"), [
    ("localhost-ish", "is not an IP address"),
    ("192.0.2.1", "is not an address of this machine"),  # TEST-NET-1: never assigned to a real host
], ids=["not-an-address", "not-here"])
def test_bad_ip_is_a_one_line_error(ip, message):
    with pytest.raises(MockgpuError, match=message) as exc:
        lab.check_ip(ip)
    assert exc.value.exit_code == 2


def test_port_is_checked_on_the_address_asked_for():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        taken = s.getsockname()[1]
        with pytest.raises(MockgpuError, match=f"port {taken} is in use"):
            lab.choose_port(taken, "0.0.0.0")
