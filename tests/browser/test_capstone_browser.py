"""The capstone (lab 10) in a real JupyterLab: the lab with its answers (labs/solutions/10-*) runs, its check says
Correct, and the cluster map drawn after the check shows the plan on the GPUs: the training Job on the four
A100 40GB, the inference replicas in three 2g.20gb MIG slices, the notebooks as replicas of the time-sliced GPUs.
With MOCKGPU_UPDATE_SCREENSHOTS=1 that map becomes docs/screenshots/capstone-cluster-map.png and the check cell
docs/screenshots/capstone-check.png."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("playwright", reason="Python Playwright is not installed (pip install -e '.[test]')")

from labpage import docs_screenshot, open_notebook, run_all_cells, wait_until_all_ran  # noqa: E402
from labserver import LABS, artifacts_dir  # noqa: E402
from playwright.sync_api import expect  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
CAPSTONE = sorted((LABS / "solutions").glob("10-*.ipynb"))


@pytest.mark.skipif(not CAPSTONE, reason="no labs/solutions/10-*.ipynb")
def test_capstone_checks_the_plan_and_draws_it(lab_server, page):
    notebook = f"solutions/{CAPSTONE[0].name}"  # the server serves labs/ (learner copies) and labs/solutions/
    try:
        open_notebook(page, lab_server.url(f"/doc/tree/{notebook}"))
        run_all_cells(page)
        wait_until_all_ran(page)
        text = "\n".join(page.locator(".jp-Notebook .jp-OutputArea-output").all_inner_texts())
        assert "All three run, at $16.98 per hour: the lowest this cluster allows." in text, text[-2000:]
        assert text.count("Correct: ") == 3 and "Not quite" not in text
        maps = page.locator(".jp-OutputArea-output .mockgpu-clustermap")
        expect(maps).to_have_count(2, timeout=30_000)
        planned = maps.nth(1)
        nodes = planned.locator(".mockgpu-node").evaluate_all("ns => ns.map(n => n.dataset.node)")
        assert nodes == ["a100-0", "a100-1", "a100-40-0", "h100-0", "mig-0", "shared-0"]
        training = planned.locator(".mockgpu-node[data-node='a100-40-0'] [data-pod^='default/training-']")
        expect(training).to_have_count(4)
        inference = planned.locator(".mockgpu-node[data-node='mig-0'] .mockgpu-mig[data-pod^='default/inference-']")
        expect(inference).to_have_count(3)
        assert sorted(inference.evaluate_all("ss => ss.map(s => s.dataset.size)")) == ["2", "2", "2"]
        shared = planned.locator(".mockgpu-node[data-node='shared-0']")
        notebooks = shared.locator(".mockgpu-replica[data-pod^='default/notebooks-']")
        expect(notebooks).to_have_count(4)
        # the memory the pods loaded, as the nodes published it (the check waits for it)
        expect(planned.locator(".mockgpu-node[data-node='mig-0'] .mockgpu-gpu[data-index='0']")).to_contain_text(
            "54/80 GiB")
        expect(shared).to_contain_text("24/80 GiB")
        # the map drawn before the check shows no workload at all
        assert maps.nth(0).locator("[data-pod^='default/']").count() == 0
        docs_screenshot(planned, "capstone-cluster-map.png")
        docs_screenshot(page.locator(".jp-Notebook .jp-CodeCell", has_text="All three run, at").first,
                        "capstone-check.png")
    finally:
        page.screenshot(path=str(artifacts_dir() / f"{Path(notebook).stem}.png"))
        lab_server.shutdown_kernels()
