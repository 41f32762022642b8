"""The HTML report opened in headless Chromium: no console error, nothing fetched, and every
plot an SVG with a non-zero size (distributions, reward vs length, subset bars, the RM-Bench
matrix). `python -m tests.evaluate.test_report docs/evaluate_report.png` redraws the README's
screenshot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rewardsmith.evaluate import evaluate, render_report

from ._chromium import CHROMIUM, open_page
from .conftest import needs_data
from .real_data import RMBENCH, labelled_gsm8k

pytestmark = [
    needs_data,
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium not installed (apt-get install chromium)"
    ),
]

MATH = {"rewards": {"correct": {"type": "math"}, "format": {"type": "think_format", "weight": 0.2}}}
STYLE = {
    "rewards": {"brevity": {"type": "length", "unit": "chars", "mode": "target", "target": 400}}
}
_PLOTS = """JSON.stringify([...document.querySelectorAll('svg.plot')].map(s => {
  const box = s.getBoundingClientRect();
  return [s.dataset.plot, box.width, box.height, s.querySelectorAll('rect,circle').length];
}))"""


def labelled_report(folder: Path) -> Path:
    rows = folder / "gsm8k_labelled.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in labelled_gsm8k(60)))
    summary = evaluate([rows], spec=MATH, attacks="answers,format", attack_rows=20, workers=1)
    page = folder / "labelled.html"
    page.write_text(render_report(summary), encoding="utf-8")
    return page


def rmbench_report(folder: Path) -> Path:
    rows = json.loads((RMBENCH / "chat_filtered.json").read_text())[:20]
    path = folder / "rmbench.json"
    path.write_text(json.dumps(rows))
    summary = evaluate([path], spec=STYLE, attacks="none", workers=1)
    page = folder / "rmbench.html"
    page.write_text(render_report(summary), encoding="utf-8")
    return page


def _check(page_path: Path, expected: set[str]) -> None:
    with open_page(page_path) as page:
        plots = json.loads(page.evaluate(_PLOTS))
        assert page.errors == []
        assert page.requests == [page_path.resolve().as_uri()]  # nothing fetched
    names = {name.split(":")[0] for name, *_ in plots}
    assert expected <= names, plots
    for name, width, height, marks in plots:
        assert width > 0 and height > 0, name
        assert marks > 0, name


def test_labelled_report_renders_its_plots(tmp_path: Path) -> None:
    page = labelled_report(tmp_path)
    html = page.read_text()
    assert "<link" not in html and "src=" not in html  # self-contained
    assert "attacks" in html and "Confusion" in html
    _check(page, {"distribution", "reward_vs_length", "subsets"})


def test_rmbench_report_renders_the_matrix(tmp_path: Path) -> None:
    _check(rmbench_report(tmp_path), {"rmbench_matrix", "distribution", "reward_vs_length"})


if __name__ == "__main__":  # redraw the README's screenshot
    import tempfile

    with tempfile.TemporaryDirectory() as folder, open_page(labelled_report(Path(folder))) as page:
        page.screenshot(Path(sys.argv[1]))
