"""The HTML report: one self-contained page (inline CSS, JS and SVG; nothing fetched).

Sections: the metrics and per-subset accuracy bars, the RM-Bench matrix, the confusion table,
reward distributions per component, reward against length, health, the attack table with
successful examples, and the comparison. Every plot is an inline `<svg class="plot">`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._run import Summary

__all__ = ["render_report"]

_W, _H, _PAD = 420, 220, 36
_MAX_POINTS = 2000

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dde6;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0;background:#fff}
td,th{border:1px solid #d8dde6;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f6}td.num{text-align:right}
.bad{background:#fde2e1}.good{background:#e3f6e8}.muted{color:#667}
.plots{display:flex;flex-wrap:wrap;gap:14px}
.plots figure{margin:0;background:#fff;border:1px solid #d8dde6;padding:6px}
figcaption{font-size:12px;color:#555}
pre{white-space:pre-wrap;max-width:900px;margin:2px 0;font-size:12px}
"""

_JS = """
const onlySuccess = document.getElementById('only-success');
if (onlySuccess) {
  onlySuccess.addEventListener('change', function (event) {
    for (const row of document.querySelectorAll('#attacks tbody tr')) {
      row.hidden = event.target.checked && row.dataset.success === '0';
    }
  });
}
"""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if math.isfinite(value) else str(value)
    return escape(str(value))


def _cell(value: Any) -> str:
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    return f"<td class=num>{_fmt(value)}</td>" if numeric else f"<td>{_fmt(value)}</td>"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], attrs: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
    return f"<table {attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _svg(name: str, inner: str, width: int = _W, height: int = _H) -> str:
    return (
        f'<svg class="plot" data-plot="{escape(name)}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">'
        f'<rect width="{width}" height="{height}" fill="#fff"/>{inner}</svg>'
    )


def _axes(lo: float, hi: float, label: str) -> str:
    x0, y0, x1 = _PAD, _H - _PAD, _W - 8
    return (
        f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#333"/>'
        f'<line x1="{x0}" y1="8" x2="{x0}" y2="{y0}" stroke="#333"/>'
        f'<text x="{x0}" y="{_H - 16}" font-size="10">{lo:.3g}</text>'
        f'<text x="{x1}" y="{_H - 16}" font-size="10" text-anchor="end">{hi:.3g}</text>'
        f'<text x="{(x0 + x1) / 2}" y="{_H - 4}" font-size="11" text-anchor="middle">'
        f"{escape(label)}</text>"
    )


def histogram(name: str, values: Sequence[float], bins: int = 20) -> str:
    """Counts of `values` in equal bins."""
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    counts = [0] * bins
    for v in values:
        counts[min(int((v - lo) / (hi - lo) * bins), bins - 1)] += 1
    top = max(counts) or 1
    width = (_W - 8 - _PAD) / bins
    bars = "".join(
        f'<rect x="{_PAD + i * width:.1f}" y="{(_H - _PAD) - c / top * (_H - _PAD - 10):.1f}" '
        f'width="{max(width - 1, 1):.1f}" height="{max(c / top * (_H - _PAD - 10), 1):.1f}" '
        f'fill="#4c78a8"><title>{c}</title></rect>'
        for i, c in enumerate(counts)
    )
    return _svg(f"distribution:{name}", bars + _axes(lo, hi, f"{name} (n={len(values)})"))


def scatter(points: Sequence[tuple[float, float]]) -> str:
    """Reward (y) against completion length in characters (x)."""
    shown = list(points)[:: max(1, len(points) // _MAX_POINTS)] or [(0.0, 0.0)]
    xs, ys = [p[0] for p in shown], [p[1] for p in shown]
    x_lo, x_hi = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y_lo, y_hi = min(ys), max(ys) if max(ys) > min(ys) else min(ys) + 1
    dots = "".join(
        f'<circle cx="{_PAD + (x - x_lo) / (x_hi - x_lo) * (_W - 8 - _PAD):.1f}" '
        f'cy="{(_H - _PAD) - (y - y_lo) / (y_hi - y_lo) * (_H - _PAD - 10):.1f}" r="2" '
        f'fill="#e45756" fill-opacity="0.5"/>'
        for x, y in shown
    )
    labels = (
        f'<text x="2" y="14" font-size="10">{y_hi:.3g}</text>'
        f'<text x="2" y="{_H - _PAD}" font-size="10">{y_lo:.3g}</text>'
    )
    return _svg("reward_vs_length", dots + labels + _axes(x_lo, x_hi, "completion length (chars)"))


def bars(name: str, items: Sequence[tuple[str, float]]) -> str:
    """Horizontal bars of values in [0, 1], one per item."""
    height = 24 * len(items) + 20
    label_w = 170
    rects = "".join(
        f'<text x="4" y="{20 + 24 * i}" font-size="11">{escape(label[:26])}</text>'
        f'<rect x="{label_w}" y="{8 + 24 * i}" width="{max(value, 0) * (_W - label_w - 50):.1f}" '
        f'height="16" fill="#54a24b"><title>{value:.4f}</title></rect>'
        f'<text x="{label_w + max(value, 0) * (_W - label_w - 50) + 4:.1f}" y="{20 + 24 * i}" '
        f'font-size="11">{value:.3f}</text>'
        for i, (label, value) in enumerate(items)
    )
    return _svg(name, rects, height=height)


def heatmap(matrix: Sequence[Sequence[float]]) -> str:
    """RM-Bench's k x k matrix: rows chosen style, columns rejected style."""
    size, cell = len(matrix), 70
    width = height = 40 + size * cell
    cells = ""
    for i, line in enumerate(matrix):
        for j, value in enumerate(line):
            shade = int(255 - 155 * value)
            zone = "hard" if j > i else "easy" if j < i else "normal"
            cells += (
                f'<rect x="{40 + j * cell}" y="{30 + i * cell}" width="{cell - 2}" '
                f'height="{cell - 2}" fill="rgb({shade},{shade},255)"><title>{zone}</title></rect>'
                f'<text x="{40 + j * cell + cell / 2 - 1}" y="{30 + i * cell + cell / 2 + 4}" '
                f'font-size="13" text-anchor="middle">{value:.3f}</text>'
            )
    cells += (
        '<text x="40" y="18" font-size="11">rejected style &#8594; (chosen style &#8595;)</text>'
    )
    return _svg("rmbench_matrix", cells, width=width, height=height + 10)


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def render_report(summary: Summary) -> str:
    """The whole page as a string."""
    data = summary.as_json()
    parts = [
        f"<h1>rewardsmith evaluate</h1><p class=muted>{escape(', '.join(summary.data_names))}"
        f" &middot; format <b>{escape(summary.format)}</b> &middot; {summary.n} rows</p>",
        "<h2>Metrics</h2>",
        _table(["metric", "value"], sorted(data["metrics"].items())),
    ]
    subsets = data["subsets"]
    if subsets:
        metric = "accuracy" if any("accuracy" in v for v in subsets.values()) else "agreement"
        items = [(name, float(v[metric])) for name, v in subsets.items() if metric in v]
        parts.append(
            "<div class=plots>" + _figure(bars("subsets", items), f"{metric} per subset") + "</div>"
        )
        keys = sorted({k for v in subsets.values() for k in v})
        parts.append(
            _table(
                ["subset", *keys], [[n, *(v.get(k, "") for k in keys)] for n, v in subsets.items()]
            )
        )
    tables = data["tables"]
    if "rmbench_matrix" in tables:
        parts += [
            "<h2>RM-Bench matrix</h2>",
            "<div class=plots>"
            + _figure(
                heatmap(tables["rmbench_matrix"]),
                "easy: lower triangle, normal: diagonal, hard: upper",
            )
            + "</div>",
        ]
    if "confusion" in tables:
        c = tables["confusion"]
        parts += [
            "<h2>Confusion</h2>",
            _table(
                ["", "reward accepts", "reward rejects"],
                [
                    ["label correct", c["true_positives"], c["false_negatives"]],
                    ["label wrong", c["false_positives"], c["true_negatives"]],
                ],
            ),
        ]
        for kind in ("false_positives", "false_negatives"):
            if tables.get(kind):
                parts.append(f"<details><summary>{kind.replace('_', ' ')}</summary>")
                parts.append(
                    _table(
                        ["id", "reward", "reason"],
                        [[r["id"], r["reward"], r["reason"]] for r in tables[kind]],
                    )
                    + "</details>"
                )
    if summary.reward_values:
        plots = [
            _figure(histogram(name, values), f"distribution of {name}")
            for name, values in summary.reward_values.items()
            if values
        ]
        if summary.reward_lengths:
            plots.append(
                _figure(scatter(summary.reward_lengths), "reward against completion length")
            )
        parts += ["<h2>Rewards</h2>", "<div class=plots>" + "".join(plots) + "</div>"]
    parts.append(_attacks_section(data))
    parts += ["<h2>Health</h2>", _health_table(data["health"])]
    if data["compare"]:
        compared = data["compare"]
        parts += [
            "<h2>Comparison (STARC)</h2>",
            _table(
                ["", "value"], [[k, v] for k, v in compared.items() if k != "disagreement_rows"]
            ),
            _table(
                ["id", "reward", "compared", "reason", "compared reason"],
                [
                    [r["id"], r["reward"], r["compared_reward"], r["reason"], r["compared_reason"]]
                    for r in compared["disagreement_rows"]
                ],
            ),
        ]
    if data["bad_lines"]:
        parts += [
            "<h2>Unreadable lines</h2>",
            "<pre>" + escape("\n".join(data["bad_lines"])) + "</pre>",
        ]
    body = "\n".join(parts)
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>rewardsmith evaluate</title><style>{_CSS}</style></head><body>{body}"
        f"<script>{_JS}</script></body></html>"
    )


def _health_table(health: dict[str, Any]) -> str:
    rows = [[k, v] for k, v in health.items() if not isinstance(v, dict)]
    out = _table(["measure", "value"], rows)
    counts = health.get("status_counts") or {}
    if counts:
        statuses = ("ok", "not_applicable", "invalid", "error", "timeout")
        out += _table(
            ["component", *statuses],
            [[n, *(c.get(s, 0) for s in statuses)] for n, c in counts.items()],
        )
    correlations = health.get("component_spearman") or {}
    if correlations:
        out += _table(["components", "Spearman"], sorted(correlations.items()))
    return out


def _attacks_section(data: dict[str, Any]) -> str:
    attacks, skipped, built = data["attacks"], data["attack_skipped_rows"], data["attack_rows"]
    counted = (
        f"<p class=muted>Built from {built} rows; {len(skipped)} rows left out of them, "
        f"{built - len(skipped)} kept.</p>"
        if built
        else ""
    )
    skipped_note = (
        f"<details><summary>{len(skipped)} rows left out of the attacks: no completion on "
        "them scored (each was not applicable, or failed by no fault of its own)</summary>"
        + _table(["row", "reason"], sorted(skipped.items()))
        + "</details>"
        if skipped
        else ""
    )
    if not attacks:
        return "<h2>Attacks</h2><p class=muted>No attack was measured.</p>" + counted + skipped_note
    rows = []
    for a in attacks:
        hit = a["successes"] > 0
        examples = "".join(
            f"<details><summary>{escape(e['note'] or 'example')}: {_fmt(e['attacked'])} vs "
            f"{_fmt(e['baseline'])}</summary><pre>{escape(e['completion'])}</pre>"
            f"<pre class=muted>{escape(str(e['reason']))}</pre></details>"
            for e in a["examples"]
        )
        rows.append(
            f'<tr data-success="{int(hit)}" class="{"bad" if hit else "good"}">'
            f"<td>{escape(a['family'])}</td><td>{escape(a['attack'])}</td>"
            f"<td>{escape(a['component'])}</td><td class=num>{a['n']}</td>"
            f"<td class=num>{a['success_rate']:.3f}</td><td>{examples}</td></tr>"
        )
    baselines = _table(["honest baseline", "value"], sorted(data["attack_baselines"].items()))
    return (
        "<h2>Attacks</h2>"
        + counted
        + "<p class=muted>Success: the attacked completion scored above its honest baseline, "
        "or escaped with a null where being left out beats it (component <code>reward</code> "
        "is the total).</p>"
        + baselines
        + skipped_note
        + "<label><input type=checkbox id=only-success> only attacks that succeeded</label>"
        + "<table id=attacks><thead><tr><th>class</th><th>attack</th><th>component</th><th>n</th>"
        + "<th>success rate</th><th>successful examples</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
