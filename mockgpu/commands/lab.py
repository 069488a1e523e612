"""``mockgpu lab``: JupyterLab on ``labs/``, opened at the first lab, with a kernel that can import mockgpu.

The first lab must open and run with no other step, so this command (a) starts Lab with this interpreter
(``python -m jupyterlab``), not whatever ``jupyter`` is first on PATH, (b) makes sure the ``python3``
kernel the notebooks name resolves to this environment's python (installing the kernel spec into this
environment if it does not), (c) opens ``01-*.ipynb`` (or the lab asked for), (d) prints the URL,
token included, before Jupyter's own log starts, and (e) turns JupyterLab's autosave off.

It listens on 127.0.0.1 unless ``--ip`` says otherwise (``--ip 0.0.0.0`` in a container published with ``docker run
-p 8888:8888``). Token authentication is always on, wherever it listens: the token is random (or
``$JUPYTER_TOKEN`` when that is set and not empty) and only the printed URL carries it.

Autosave: the labs in ``labs/`` are generated learner copies tracked by git (``scripts/learner-copies``).
With autosave on, Run All wrote every output back into them after two minutes, so merely running a lab
left ``git status`` dirty and the next ``git pull`` in conflict. With it off, a lab changes on disk only
when the learner saves (File > Save, or Save As to keep a copy elsewhere); ``git checkout labs/`` resets
it. The setting is an ``overrides.json`` in an app-settings folder of this environment that only this
command passes to JupyterLab (``--LabApp.app_settings_dir``); a JupyterLab started otherwise is unchanged.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import ipaddress
import json
import os
import secrets
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from mockgpu.errors import MockgpuError

DEFAULT_PORT = 8888
DEFAULT_IP = "127.0.0.1"  # this machine only; --ip widens it
KERNEL_NAME = "python3"  # what every lab's metadata names
# JupyterLab's settings overrides (plugin id -> settings), as JupyterLab reads them from overrides.json
OVERRIDES = {"@jupyterlab/docmanager-extension:plugin": {"autosave": False}}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("lab", help="start JupyterLab on the labs/ folder, opened at the first lab")
    p.add_argument("open", nargs="?", default=None, metavar="LAB",
                   help="lab to open: its number (08) or file name (default: the lowest-numbered, 01)")
    p.add_argument("--labs", default=None, help="folder of notebooks (default: labs/ of this checkout)")
    p.add_argument("--port", type=int, default=None, help=f"port (default {DEFAULT_PORT}, or a free one if taken)")
    p.add_argument("--ip", default=DEFAULT_IP, metavar="ADDR",
                   help=f"address to listen on (default {DEFAULT_IP}: this machine only); 0.0.0.0 listens on every "
                        "address, e.g. in a container run with `docker run -p 8888:8888`. Token authentication stays "
                        "on wherever it listens: only the printed URL carries the token")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser; just print the URL")
    p.set_defaults(func=run)


def labs_dir(explicit: str | None) -> Path:
    """The labs folder: the one asked for, else ``labs/`` beside the package's checkout."""
    d = Path(explicit) if explicit else Path(__file__).resolve().parents[2] / "labs"
    if not d.is_dir():
        raise MockgpuError(f"no labs folder at {d}; pass --labs DIR", exit_code=2)
    return d.resolve()


def _number(notebook: Path) -> int | None:
    head = notebook.name.split("-", 1)[0]
    return int(head) if head.isdigit() else None


def pick_lab(d: Path, wanted: str | None) -> Path | None:
    """The notebook to open: ``wanted`` (a number like ``8``/``08`` or a file name), else the lowest-numbered."""
    notebooks = sorted(p for p in d.glob("*.ipynb") if not p.name.startswith("."))
    if wanted is None:
        return notebooks[0] if notebooks else None
    if wanted.isdigit():
        hits = [p for p in notebooks if _number(p) == int(wanted)]
    else:
        hits = [p for p in notebooks if p.name in (wanted, f"{wanted}.ipynb")]
    if not hits:
        names = ", ".join(p.name for p in notebooks) or "none"
        raise MockgpuError(f"no lab {wanted!r} in {d} (labs: {names})", exit_code=2)
    return hits[0]


def check_ip(ip: str) -> str:
    """``ip`` if it is an IPv4 or IPv6 address of this machine (or a wildcard); else a one-line error."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        raise MockgpuError(f"--ip {ip!r} is not an IP address (e.g. 127.0.0.1, or 0.0.0.0 for every address)",
                           exit_code=2) from None
    with socket.socket(_family(ip), socket.SOCK_STREAM) as s:
        try:
            s.bind((ip, 0))
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                raise MockgpuError(f"--ip {ip} is not an address of this machine", exit_code=2) from None
            raise
    return str(addr)


def _family(ip: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in ip else socket.AF_INET


def port_is_free(port: int, ip: str = DEFAULT_IP) -> bool:
    with socket.socket(_family(ip), socket.SOCK_STREAM) as s:
        try:
            s.bind((ip, port))
        except OSError:
            return False
    return True


def choose_port(asked: int | None, ip: str = DEFAULT_IP) -> int:
    """The asked port (an error if taken), else 8888, else any free port, on address ``ip``. Jupyter is then
    told not to move to another port, so the URL printed before it starts stays true."""
    if asked is not None:
        if not 0 < asked < 65536:
            raise MockgpuError(f"--port {asked} is not a TCP port", exit_code=2)
        if not port_is_free(asked, ip):
            raise MockgpuError(f"port {asked} is in use (another JupyterLab?); pass another --port", exit_code=2)
        return asked
    if port_is_free(DEFAULT_PORT, ip):
        return DEFAULT_PORT
    with socket.socket(_family(ip), socket.SOCK_STREAM) as s:
        s.bind((ip, 0))
        return int(s.getsockname()[1])


def url_host(ip: str) -> str:
    """The host of the printed URL: loopback for a wildcard address (it listens there too), else ``ip``."""
    addr = ipaddress.ip_address(ip)
    if addr.is_unspecified:
        return "127.0.0.1" if addr.version == 4 else "[::1]"
    return f"[{ip}]" if addr.version == 6 else ip


def reach_note(ip: str) -> str:
    """A line for an address beyond loopback: how others reach it, and that the token is still needed."""
    if ipaddress.ip_address(ip).is_loopback:
        return ""
    where = "every address of this machine" if ipaddress.ip_address(ip).is_unspecified else ip
    return (f"Listening on {where}: from elsewhere use this machine's address (or the host port `docker run -p` "
            f"published) in place of {url_host(ip)}; the token is still required.\n")


def lab_path(d: Path, notebook: Path | None) -> str:
    return f"/lab/tree/{notebook.relative_to(d).as_posix()}" if notebook else "/lab"


def settings_dir(prefix: str = sys.prefix) -> Path:
    """The app-settings folder ``mockgpu lab`` gives JupyterLab: ``overrides.json`` = ``OVERRIDES`` (autosave
    off), in this environment (``<prefix>/share/mockgpu/jupyterlab-settings``), rewritten on a start that finds it
    different. A file that already says so is left alone: in the lab image the environment is root's and the learner
    (uid 1000) cannot write there, so the image makes it at build time."""
    d = Path(prefix) / "share" / "mockgpu" / "jupyterlab-settings"
    f, text = d / "overrides.json", json.dumps(OVERRIDES, indent=1) + "\n"
    try:
        if f.read_text(encoding="utf-8") == text:
            return d
    except OSError:
        pass
    d.mkdir(parents=True, exist_ok=True)
    f.write_text(text, encoding="utf-8")
    return d


def build_argv(d: Path, notebook: Path | None, port: int, *, no_browser: bool, as_root: bool,
               python: str = sys.executable, settings: Path | None = None, ip: str = DEFAULT_IP) -> list[str]:
    """The JupyterLab command line (the token goes in the environment, not here, so ``ps`` does not show it);
    ``settings``: an app-settings folder (``settings_dir()``); ``ip``: the address it listens on."""
    argv = [python, "-m", "jupyterlab", f"--ServerApp.root_dir={d}", f"--LabApp.default_url={lab_path(d, notebook)}",
            f"--ServerApp.ip={ip}", f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if settings is not None:
        argv.append(f"--LabApp.app_settings_dir={settings}")
    if no_browser:
        argv.append("--no-browser")
    if as_root:  # containers often run as root; Jupyter refuses that unless told
        argv.append("--allow-root")
    return argv


def kernel_command(name: str = KERNEL_NAME) -> list[str]:
    """The command Jupyter would run for kernel ``name`` here (jupyter_client's own resolution,
    including its rule that a bare ``python`` means the server's interpreter)."""
    from jupyter_client.kernelspec import NoSuchKernel
    from jupyter_client.manager import KernelManager

    try:
        return KernelManager(kernel_name=name).format_kernel_cmd()
    except NoSuchKernel:
        return []


def in_this_env(argv: list[str], python: str = sys.executable) -> bool:
    """Whether a kernel command runs an interpreter of this environment (same bin folder; symlinks are not
    followed, because every venv's python links to the same base interpreter)."""
    return bool(argv) and Path(os.path.abspath(argv[0])).parent == Path(os.path.abspath(python)).parent


def install_kernel_into_env() -> None:
    from ipykernel.kernelspec import install

    install(kernel_name=KERNEL_NAME, prefix=sys.prefix)


def ensure_kernel(install: Callable[[], None] = install_kernel_into_env) -> list[str]:
    """Make the ``python3`` kernel run this environment's python; return its command."""
    os.environ["JUPYTER_PREFER_ENV_PATH"] = "1"  # this env's kernel spec before ~/.local's (also for the server)
    argv = kernel_command()
    if in_this_env(argv):
        return argv
    install()
    argv = kernel_command()
    if not in_this_env(argv):
        found = argv[0] if argv else "no kernel"
        raise MockgpuError(f"the {KERNEL_NAME!r} Jupyter kernel runs {found}, not {sys.executable}, even after "
                           f"installing it into {sys.prefix}; is JUPYTER_PATH set? (unset it, or run ./scripts/lab)")
    return argv


def run(args: argparse.Namespace) -> int:
    d = labs_dir(args.labs)
    if importlib.util.find_spec("jupyterlab") is None:
        raise MockgpuError("JupyterLab is not installed here; run ./scripts/lab, which installs it")
    ensure_kernel()
    notebook = pick_lab(d, args.open)
    ip = check_ip(args.ip)
    port = choose_port(args.port, ip)
    token = os.environ.get("JUPYTER_TOKEN") or secrets.token_hex(24)  # never empty: token auth stays on
    os.environ["JUPYTER_TOKEN"] = token
    argv = build_argv(d, notebook, port, no_browser=args.no_browser, as_root=os.geteuid() == 0,
                      settings=settings_dir(), ip=ip)
    url = f"http://{url_host(ip)}:{port}{lab_path(d, notebook)}?token={token}"
    print(f"mockgpu lab: JupyterLab on {d}\n\n    {url}\n\n(open that URL if no browser opens; Ctrl-C stops it)\n"
          f"{reach_note(ip)}Autosave is off: running a lab changes nothing on disk; File > Save keeps your answers.\n",
          flush=True)
    os.execv(argv[0], argv)
    return 0  # not reached
