"""The labs in a real browser: JupyterLab + Debian's chromium, Run → Run All Cells, then look at what rendered.

Labs 08 and 09 run as the learner's copies in labs/ (answers blank: each exercise's check says what to fill
in), as ``./scripts/lab`` opens them; the others as the labs with answers in labs/solutions/.

nbval proves each lab runs and prints the right answers; only a browser shows that the outputs render
(matplotlib images, ipywidgets views, which need Lab's widget manager). The notebooks are served without
their stored outputs, so everything checked here was produced by this run.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("playwright", reason="Python Playwright is not installed (pip install -e '.[test]')")

from labpage import docs_screenshot, open_notebook, run_all_cells, wait_until_all_ran  # noqa: E402
from labserver import LABS, artifacts_dir  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]


@dataclass(frozen=True)
class LabCase:
    pattern: str  # glob of the notebook, e.g. "01-*.ipynb"
    check: Callable  # (page) -> None, asserts on what rendered
    folder: str = "solutions"  # "solutions": the lab with answers; "": the learner's copy in labs/
    run_timeout: float = 180.0  # seconds for Run All (lab 11's Jobs run for real: 44–94 s under nbclient)

    def notebook(self) -> str | None:
        """The notebook's path relative to labs/ (and to the served copy of it)."""
        found = sorted((LABS / self.folder).glob(self.pattern))
        return str(found[0].relative_to(LABS)) if found else None


def chips_outside_their_tile(cmap) -> list[str]:
    """Pods whose chip the browser laid out beyond the edges of the GPU tile that holds it."""
    return cmap.locator(".mockgpu-gpu").evaluate_all("""tiles => tiles.flatMap(t => {
        const b = t.getBoundingClientRect();
        return [...t.querySelectorAll('.mockgpu-replica')].filter(c => {
            const r = c.getBoundingClientRect();
            return r.bottom > b.bottom + 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.left < b.left - 1;
        }).map(c => `${c.dataset.pod} on GPU ${t.dataset.index}`);
    })""")


def check_lab01(page) -> None:
    """Lab 01: each step is its own snapshot: the empty cluster (8 GPU tiles on 4 cards, no pod), the 4-GPU
    Job pod pending with its FailedScheduling line in the inspector, at the end the two 2-GPU pods of Job
    workers on the tiles the device plugin gave them; the submit panel's live map follows the cluster."""
    frozen = page.locator(".jp-OutputArea-output .mockgpu-frozen .mockgpu-clustermap")
    expect(frozen).to_have_count(3, timeout=30_000)
    empty, pending, workers = frozen.nth(0), frozen.nth(1), frozen.nth(2)
    nodes = empty.locator(".mockgpu-node")
    assert nodes.evaluate_all("ns => ns.map(n => n.dataset.node)") == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert [nodes.nth(i).locator(".mockgpu-gpu").count() for i in range(4)] == [2, 2, 2, 2]
    expect(nodes.first.locator(".mockgpu-gpu").first).to_contain_text("GPU 0")
    expect(empty.locator(".mockgpu-replica")).to_have_count(0)  # "the empty cluster" is empty
    expect(pending.locator(".mockgpu-pending")).to_contain_text("trainer-")
    expect(pending.locator(".mockgpu-gpu .mockgpu-replica")).to_have_count(0)  # 8 idle GPUs
    # the Job workers' two pods, workers-<random>, 2 GPUs each
    expect(workers.locator(".mockgpu-gpu .mockgpu-replica[data-pod^='default/workers-']")).to_have_count(4)
    # the Job trainer's pod is trainer-<random>
    failed = page.locator(".jp-OutputArea-output .mockgpu-inspector[data-pod^='default/trainer-'] .mockgpu-failed")
    expect(failed).to_contain_text("FailedScheduling: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
                                   timeout=30_000)
    live = page.locator(".jp-OutputArea-output .widget-vbox", has_text="live: follows the cluster").locator(
        ".mockgpu-clustermap").first
    expect(live.locator(".mockgpu-gpu .mockgpu-replica[data-pod^='default/workers-']")).to_have_count(4)
    clock = page.locator(".jp-OutputArea-output .mockgpu-costclock").first
    expect(clock).to_contain_text("8 idle GPUs")
    docs_screenshot(workers, "cluster-map.png")
    docs_screenshot(page.locator(".jp-OutputArea-output .widget-vbox", has=page.locator(".mockgpu-costclock")).first,
                    "lab01-cost-clock.png")
    assert not chips_outside_their_tile(workers)  # a chip once spilled out of its tile (fixed in render.py)


def check_lab02(page) -> None:
    """Lab 02: the live submit panel still shows the API server refusing half a GPU after Run All (a refused
    pod does not exist, the outcome stays), and the snapshot map of the cluster's four nodes."""
    refused = page.locator(".jp-OutputArea-output .mockgpu-outcome[data-kind='refused']").first
    expect(refused).to_contain_text("half-gpu", timeout=30_000)
    cmap = page.locator(".jp-OutputArea-output .mockgpu-frozen .mockgpu-clustermap").first
    expect(cmap.locator(".mockgpu-node")).to_have_count(4)
    docs_screenshot(page.locator(".jp-OutputArea-output .widget-vbox",
                                 has=page.locator(".mockgpu-outcome")).first, "lab02-submit-refused.png")
    docs_screenshot(cmap, "lab02-cluster-map.png")


def check_lab05(page) -> None:
    """Lab 05: the snapshot map shows the 2-GPU pod on the two GPUs the device plugin preferred."""
    cmap = page.locator(".jp-OutputArea-output .mockgpu-frozen .mockgpu-clustermap").first
    expect(cmap.locator(".mockgpu-gpu .mockgpu-replica[data-pod='default/pair']")).to_have_count(2, timeout=30_000)
    docs_screenshot(cmap, "lab05-nvlink-pair.png")


def check_lab03(page) -> None:
    """Lab 03: after Run All, Part 1's inspector still shows Part 1's pod (default-1 under default-scheduler),
    the spreading map one 1-GPU pod on every node (one free GPU each) and both 2-GPU pods pending, the
    bin-packing map two full nodes and two 2-GPU pods running."""
    part1 = page.locator(".jp-OutputArea-output .mockgpu-frozen .mockgpu-inspector")
    expect(part1).to_have_count(1, timeout=30_000)
    expect(part1).to_have_attribute("data-pod", "default/default-1")
    expect(part1).to_contain_text("scheduler default-scheduler")
    expect(part1).not_to_contain_text("packed")
    spread, packed = (page.locator(".jp-OutputArea-output .mockgpu-frozen .mockgpu-clustermap").nth(i)
                      for i in range(2))
    nodes = spread.locator(".mockgpu-node")
    assert [nodes.nth(i).locator(".mockgpu-gpu .mockgpu-replica").count() for i in range(4)] == [1, 1, 1, 1]
    expect(spread.locator(".mockgpu-pending")).to_contain_text("spread-big-0")
    expect(spread.locator(".mockgpu-pending")).to_contain_text("spread-big-1")
    expect(packed.locator(".mockgpu-gpu .mockgpu-replica")).to_have_count(8)
    expect(packed.locator(".mockgpu-pending")).to_have_count(0)
    docs_screenshot(spread, "lab03-spreading.png")
    docs_screenshot(packed, "lab03-bin-packing.png")


def check_lab04(page) -> None:
    """Lab 04: the inspector shows the pod the text talks about (step-by-step), with the env the device plugin
    injected and what CUDA saw, not a later pod of the lab."""
    inspector = page.locator(".jp-OutputArea-output .mockgpu-frozen .mockgpu-inspector")
    expect(inspector).to_have_count(1, timeout=30_000)
    expect(inspector).to_have_attribute("data-pod", "default/step-by-step")
    expect(inspector).to_contain_text("NVIDIA_VISIBLE_DEVICES=GPU-")
    expect(inspector).to_contain_text("cuda:0")
    docs_screenshot(inspector, "lab04-inspector.png")


def check_lab06(page) -> None:
    """Lab 06: the MIG map, each instance at its slots with its full profile readable, and the OOM."""
    cmap = page.locator(".jp-OutputArea-output .mockgpu-frozen .mockgpu-clustermap").first
    expect(cmap.locator(".mockgpu-mig")).to_have_count(10, timeout=30_000)  # 7 x 1g.10gb + 3g + 2g + 1g
    lines = cmap.locator(".mockgpu-mig-line")
    expect(lines.first).to_contain_text("1g.10gb")
    # the profile names are not cut: each line's text fits its box
    assert not lines.evaluate_all("ls => ls.filter(l => l.scrollWidth > l.clientWidth + 1).map(l => l.innerText)")
    memory = page.locator(".jp-OutputArea-output .mockgpu-memory").first
    expect(memory.locator(".mockgpu-oom")).to_be_visible()
    docs_screenshot(cmap, "lab06-mig-map.png")


def check_lab07(page) -> None:
    """Lab 07: the memory view marks the OOM and the blast radius: the Deployment's replica on the big pod's
    GPU (its name is random: the row names its owner), restarted; the cluster map shows the restarts."""
    memory = page.locator(".jp-OutputArea-output .mockgpu-memory", has_text="blast radius").first
    expect(memory).to_be_visible(timeout=30_000)
    expect(memory).to_contain_text("OOM at")
    expect(memory.locator("tr", has_text="Deployment inference")).to_have_count(2)
    expect(memory.locator("tr", has_text="blast radius")).to_have_count(1)
    expect(memory.locator("tr", has_text="blast radius")).to_contain_text("Deployment inference")
    expect(memory.locator("tr", has_text="default/big")).not_to_contain_text("blast radius")
    # the map where the text says "two holders": the big pod and one replica
    two = page.locator(".jp-OutputArea-output .mockgpu-frozen .mockgpu-clustermap").first
    expect(two.locator(".mockgpu-gpu .mockgpu-replica")).to_have_count(2)
    restarts = page.locator(".jp-OutputArea-output .mockgpu-clustermap .mockgpu-restarts").first
    expect(restarts).to_be_visible()
    expect(restarts).to_have_text(re.compile(r"↻\d+"))
    # the count is never cut off by the chip (a long pod name is, with an ellipsis)
    assert restarts.evaluate("r => r.getBoundingClientRect().right <= "
                             "r.parentElement.getBoundingClientRect().right + 1")
    expect(memory.locator(".mockgpu-oom").first).to_be_visible()
    docs_screenshot(memory, "oom-blast-radius.png")
    docs_screenshot(page.locator(".jp-OutputArea-output .mockgpu-clustermap",
                                 has=page.locator(".mockgpu-restarts")).last,
                    "lab07-restarts.png")


def check_lab08(page) -> None:
    outputs = page.locator(".jp-Notebook .jp-OutputArea-output")
    # three matplotlib figures (tiny cluster, allocation curves, node pictures) come back as <img> from PNG
    images = page.locator(".jp-Notebook .jp-OutputArea-output[data-mime-type='image/png'] img")
    assert images.count() == 3
    for i in range(3):
        assert images.nth(i).evaluate("img => img.complete && img.naturalWidth > 100")
    text = "\n".join(outputs.all_inner_texts())
    # the learner's copy: the starter policy spreads and its check says so; the instructor's check is not there
    assert "Not yet:" in text and "points short of Best-fit" in text
    assert "Well done" not in text
    docs_screenshot(images.nth(1), "lab08-allocation-curves.png")


def check_lab09(page) -> None:
    """Lab 09: the pod inspector names the ResourceClaim and the device the scheduler allocated to it (DRA),
    and the env the driver's CDI spec set. This is the learner's copy: the three answers are None, so each check
    says what to fill in and grades nothing, and Run All still goes to the end."""
    claims = page.locator(".jp-OutputArea-output .mockgpu-inspector[data-pod='default/big-mem'] .mockgpu-claims")
    expect(claims).to_contain_text("claim one-40g (request gpu): gpu-0", timeout=30_000)
    expect(claims).to_contain_text("NVIDIA_VISIBLE_DEVICES=GPU-")
    docs_screenshot(page.locator(".jp-OutputArea-output .mockgpu-inspector[data-pod='default/big-mem']"),
                    "lab09-dra-claims.png")
    # the cluster map: both-0's GPU 3 cut into the two MIG instances the claims got, at their slices
    cmap = page.locator(".jp-OutputArea-output .mockgpu-clustermap").first
    gpu3 = cmap.locator(".mockgpu-node[data-node='both-0'] .mockgpu-gpu[data-index='3']")
    expect(gpu3.locator(".mockgpu-mig[data-pod='default/small']")).to_have_attribute("data-start", "0")
    expect(gpu3.locator(".mockgpu-mig[data-pod='default/medium']")).to_have_attribute("data-start", "4")
    expect(cmap.locator(".mockgpu-pending")).to_contain_text("second-medium")
    text = "\n".join(page.locator(".jp-Notebook .jp-OutputArea-output").all_inner_texts())
    assert text.count("is still None: set it to") == 3, text
    assert "Correct" not in text and "Not quite" not in text
    assert "cannot allocate all claims" in text


def check_lab11(page) -> None:
    """Lab 11 (the learner's copy): the gang view draws the Jobs and PodGroups, the deadlock printed 8 GPUs held and
    0 training, both exercises wait for an answer, and the Kueue part says in one line that it is skipped on the
    embedded backend."""
    gangs = page.locator(".jp-OutputArea-output .mockgpu-gangs").first
    expect(gangs).to_be_visible(timeout=30_000)
    expect(gangs).to_contain_text("GPUs held")
    text = "\n".join(page.locator(".jp-Notebook .jp-OutputArea-output").all_inner_texts())
    assert "GPUs held: 8, training: 0" in text
    assert "PodGroup team-b: minCount 4, 0 bound, Unschedulable" in text
    assert text.count("is still None: set it to") == 2, text
    assert "Correct" not in text and "Not quite" not in text
    assert "skipping the Kueue part" in text
    frozen = page.locator(".jp-OutputArea-output .mockgpu-frozen .mockgpu-clustermap").first
    expect(frozen).to_be_visible()
    gangs.scroll_into_view_if_needed()
    gangs.screenshot(path=str(artifacts_dir() / "lab11-gangs.png"))  # to look at, not committed
    frozen.scroll_into_view_if_needed()
    frozen.screenshot(path=str(artifacts_dir() / "lab11-deadlock-map.png"))


def check_lab12(page) -> None:
    """Lab 12 (the learner's copy: both answers None, Run All still goes to the end): the live chart of the GPUs'
    utilization renders as a picture, and the story's outputs show the fault through both APIs."""
    chart = page.locator(".jp-OutputArea-output .mockgpu-metricchart").first
    expect(chart).to_contain_text("DCGM_FI_DEV_GPU_UTIL", timeout=30_000)
    expect(chart).to_contain_text("both-0 GPU 0")
    image = page.locator(".jp-OutputArea-output img[alt='DCGM_FI_DEV_GPU_UTIL over time'], "
                         ".jp-OutputArea-output .widget-image").first
    expect(image).to_be_visible()
    text = "\n".join(page.locator(".jp-Notebook .jp-OutputArea-output").all_inner_texts())
    for line in ("Xid 79 on both-0 GPU 0: GPU has fallen off the bus",
                 "allocatedResourcesStatus: [('nvidia.com/gpu', ['Unhealthy'])]",
                 "CUDA error: unspecified launch failure", "both-0 GPU 0: DCGM_FI_DEV_XID_ERRORS 79",
                 "('gpu.mockgpu.io/xid', '79', 'NoExecute')", "DeviceTaintManagerEviction"):
        assert line in text, line
    assert text.count("is still None: set it to") == 2, text
    assert "Correct" not in text and "Not quite" not in text
    docs_screenshot(chart, "lab12-utilization.png")


CASES = [
    LabCase("01-*.ipynb", check_lab01),
    LabCase("02-*.ipynb", check_lab02),
    LabCase("03-*.ipynb", check_lab03),
    LabCase("04-*.ipynb", check_lab04),
    LabCase("05-*.ipynb", check_lab05),
    LabCase("06-*.ipynb", check_lab06),
    LabCase("07-*.ipynb", check_lab07),
    LabCase("08-*.ipynb", check_lab08, folder=""),  # the learner's copies: their checks expect blank answers
    LabCase("09-*.ipynb", check_lab09, folder=""),
    LabCase("11-*.ipynb", check_lab11, folder="", run_timeout=420.0),
    LabCase("12-*.ipynb", check_lab12, folder=""),
]


def _present(cases: list[LabCase]) -> list:
    return [pytest.param(c, id=f"lab{c.pattern[:2]}", marks=() if c.notebook()
                         else pytest.mark.skip(reason=f"no labs/{c.pattern} yet")) for c in cases]


def run_in_lab(page, server, notebook: str, timeout_s: float = 180.0) -> None:
    """Open ``notebook``, Run All Cells, wait; check every cell ran in order on this env's python.
    A screenshot goes to artifacts/browser/ whatever happens."""
    try:
        open_notebook(page, server.url(f"/doc/tree/{notebook}"))
        run_all_cells(page)
        result = wait_until_all_ran(page, timeout_s)
        assert result.prompts == [f"[{i}]:" for i in range(1, len(result.prompts) + 1)]
        # the kernel Lab started is this environment's interpreter, so `import mockgpu` means this checkout
        kernels = server.kernel_pids()
        assert kernels, "no kernel process found for the server"
        for pid in kernels:
            assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() == sys.executable
    finally:
        page.screenshot(path=str(artifacts_dir() / f"{Path(notebook).stem}.png"))


@pytest.mark.parametrize("case", _present(CASES))
def test_lab_runs_and_renders_in_jupyterlab(case: LabCase, lab_server, page):
    try:
        run_in_lab(page, lab_server, case.notebook(), case.run_timeout)
        case.check(page)
    finally:
        lab_server.shutdown_kernels()


def test_cluster_map_and_pod_inspector_render_in_jupyterlab(lab_server, page):
    """The widgets in a real Lab, on a real embedded cluster: node cards with their GPU tiles, the running
    pod on the GPU it got with its memory, the pending pod, and the inspector's FailedScheduling line."""
    from widget_smoke import FAILED_PREFIX, write_smoke_notebook

    notebook = write_smoke_notebook(lab_server.root / "widget-smoke.ipynb")
    try:
        run_in_lab(page, lab_server, notebook.name)
        cmap = page.locator(".jp-OutputArea-output .mockgpu-clustermap")
        expect(cmap).to_have_count(1, timeout=30_000)  # the HTML widget view, so Lab's widget manager works
        nodes = cmap.locator(".mockgpu-node")
        assert nodes.evaluate_all("ns => ns.map(n => n.dataset.node)") == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
        for i in range(4):
            expect(nodes.nth(i).locator(".mockgpu-gpu")).to_have_count(2)  # seed-4x2: two A100s per node
        expect(nodes.first).to_contain_text("GPU 0")
        expect(nodes.first).to_contain_text("GPU 1")
        tile = cmap.locator(".mockgpu-gpu", has=page.locator(".mockgpu-replica[data-pod='default/train']"))
        expect(tile).to_have_count(1)  # one GPU, the one the device plugin allocated
        expect(tile).to_contain_text("30/80 GiB")  # the workload's 30 GiB, as the kubelet published it
        expect(cmap.locator(".mockgpu-pending")).to_contain_text("too-big")
        inspector = page.locator(".jp-OutputArea-output .mockgpu-inspector[data-pod='default/too-big']")
        expect(inspector.locator(".mockgpu-failed")).to_contain_text(f"FailedScheduling: {FAILED_PREFIX}",
                                                                      timeout=30_000)
        if not LabCase("01-*.ipynb", check_lab01).notebook():  # lab 01's map is the better picture
            docs_screenshot(cmap, "cluster-map.png")
        assert not chips_outside_their_tile(cmap)
    finally:
        page.screenshot(path=str(artifacts_dir() / "widget-smoke.png"))
        lab_server.shutdown_kernels()


def test_mockgpu_lab_opens_the_first_lab_with_a_working_kernel(lab_server, page, tmp_path):
    """``mockgpu lab`` as a learner runs it: the URL it prints opens the lowest-numbered lab, whose kernel
    (this environment's python) starts and runs a cell."""
    from labserver import LabServer

    labs = lab_server.root  # the output-free copy; this second server only reads it
    first = sorted(labs.glob("*.ipynb"))[0].name
    server = LabServer(root=labs, home=tmp_path / "home")
    server.command = [sys.executable, "-m", "mockgpu.cli", "lab", "--no-browser", f"--port={server.port}",
                      f"--labs={labs}"]
    try:
        server.start()
        printed = [line.strip() for line in server.log_path.read_text().splitlines() if line.strip().startswith("http")]
        assert printed[0] == server.url(f"/lab/tree/{first}")  # the line `mockgpu lab` prints first
        open_notebook(page, printed[0])
        expect(page.locator("#jp-main-statusbar")).to_contain_text(first)  # the current document's path
        page.locator(".jp-Notebook .jp-CodeCell").first.click()
        page.keyboard.press("Shift+Enter")  # run the first code cell, as a learner would
        first_prompt = page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt").first
        expect(first_prompt).to_have_text("[1]:", timeout=120_000)
        argv0 = Path(f"/proc/{server.kernel_pids()[0]}/cmdline").read_bytes().split(b"\0")[0].decode()
        assert argv0 == sys.executable
    finally:
        page.screenshot(path=str(artifacts_dir() / "mockgpu-lab-command.png"))
        server.stop()
