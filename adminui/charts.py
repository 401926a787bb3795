"""Server-side SVG charts for the dashboard: no JavaScript, no CDN, readable offline and in
screenshots. Each function returns safe markup; every bar carries a <title> tooltip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

OUTCOME_COLOURS = {"prefetch": "#2f9e6e", "hint": "#e3a008", "miss": "#c9ced6"}
STATUS_COLOURS = {"active": "#2f9e6e", "pending": "#5b8def", "stale": "#9aa3af", "quarantined": "#d9534f"}


def _nice_max(value: float) -> float:
    """A round axis maximum ≥ value (1, 2, 5 × 10^n)."""
    if value <= 0:
        return 1
    magnitude = 1
    while magnitude * 10 <= value:
        magnitude *= 10
    for step in (1, 2, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def recalls_per_day(daily: Sequence[dict[str, Any]], *, width: int = 720, height: int = 220) -> SafeString:
    """Stacked bars per day: prefetch (bottom), hint, miss."""
    left, right, top, bottom = 36, 8, 10, 24
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [d["prefetch"] + d["hint"] + d["miss"] for d in daily]
    y_max = _nice_max(max(totals, default=0))
    n = max(len(daily), 1)
    slot = plot_w / n
    bar_w = max(slot * 0.72, 1.0)
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Recalls per day by outcome" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i in range(5):
        value = y_max * i / 4
        y = top + plot_h - plot_h * i / 4
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" class="axis" text-anchor="end">{value:g}</text>')
    label_every = max(1, round(n / 10))
    for i, d in enumerate(daily):
        x = left + i * slot + (slot - bar_w) / 2
        y = top + plot_h
        total = totals[i]
        tip = escape(f"{d['day']:%a %d %b}: {total} recalls — {d['prefetch']} prefetch, {d['hint']} hint, "
                     f"{d['miss']} miss")
        parts.append(f'<g class="day"><title>{tip}</title>')
        for outcome in ("prefetch", "hint", "miss"):
            h = plot_h * d[outcome] / y_max
            if h <= 0:
                continue
            y -= h
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                         f'fill="{OUTCOME_COLOURS[outcome]}" data-outcome="{outcome}"/>')
        parts.append("</g>")
        if i % label_every == 0 or i == n - 1:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height - 6}" class="axis" text-anchor="middle">'
                         f'{d["day"]:%d %b}</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every interpolated text is escaped or numeric


def hit_rate_per_day(daily: Sequence[dict[str, Any]], *, width: int = 720, height: int = 160) -> SafeString:
    """Daily hit rate ((prefetch + hint) / recalls) as a line; days without recalls are gaps."""
    left, right, top, bottom = 36, 8, 10, 24
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(len(daily), 1)
    slot = plot_w / n
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="Hit rate per day" '
        f'xmlns="http://www.w3.org/2000/svg">'
    ]
    for pct in (0, 50, 100):
        y = top + plot_h - plot_h * pct / 100
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" class="axis" text-anchor="end">{pct}%</text>')
    segments: list[list[tuple[float, float]]] = [[]]
    dots = []
    for i, d in enumerate(daily):
        total = d["prefetch"] + d["hint"] + d["miss"]
        if not total:
            if segments[-1]:
                segments.append([])
            continue
        rate = (d["prefetch"] + d["hint"]) / total
        x = left + i * slot + slot / 2
        y = top + plot_h - plot_h * rate
        segments[-1].append((x, y))
        tip = escape(f"{d['day']:%a %d %b}: {rate:.0%} hit rate ({total} recalls)")
        dots.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" class="dot"><title>{tip}</title></circle>')
    for seg in segments:
        if len(seg) > 1:
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in seg)
            parts.append(f'<polyline points="{points}" class="line"/>')
    parts.extend(dots)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - numbers and escaped text only


def horizontal_bars(rows: Sequence[tuple[str, int, str]], *, label: str, width: int = 340,
                    row_h: int = 26) -> SafeString:
    """One bar per (name, value, colour) row, value printed at the bar's end."""
    label_w, value_w = 96, 56
    height = row_h * max(len(rows), 1) + 4
    plot_w = width - label_w - value_w
    top = max((v for _, v, _ in rows), default=0) or 1
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}" '
        f'xmlns="http://www.w3.org/2000/svg">'
    ]
    for i, (name, value, colour) in enumerate(rows):
        y = 2 + i * row_h
        w = plot_w * value / top
        parts.append(f'<text x="{label_w - 8}" y="{y + row_h * 0.62:.1f}" class="label" text-anchor="end">'
                     f'{escape(name)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 4}" width="{max(w, 1.5):.1f}" height="{row_h - 10}" rx="3" '
                     f'fill="{colour}"><title>{escape(name)}: {value:,}</title></rect>')
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + row_h * 0.62:.1f}" class="value">{value:,}</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - escaped text and numbers only


def bars_per_day(values: Sequence[tuple[Any, float]], *, label: str, unit: str = "", width: int = 720,
                 height: int = 140) -> SafeString:
    """One bar per (day, value): the savings per day."""
    pad_l, pad_b = 44, 18
    plot_w, plot_h = width - pad_l - 8, height - pad_b - 8
    top = _nice_max(max((v for _, v in values), default=0) or 1)
    bar_w = plot_w / max(len(values), 1)
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}" '
             f'xmlns="http://www.w3.org/2000/svg">',
             f'<text x="{pad_l - 6}" y="14" class="label" text-anchor="end">{top:g}</text>',
             f'<text x="{pad_l - 6}" y="{8 + plot_h}" class="label" text-anchor="end">0</text>']
    for i, (day, value) in enumerate(values):
        h = plot_h * value / top
        x = pad_l + i * bar_w
        parts.append(f'<rect x="{x + 1:.1f}" y="{8 + plot_h - h:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                     f'height="{max(h, 0):.1f}" fill="#2f6f4f"><title>{escape(str(day))}: {value:,.0f}{unit}'
                     f'</title></rect>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - escaped text and numbers only


def calibration_curve(curve: Sequence[Any], *, current: float, suggested: float | None, width: int = 520,
                      height: int = 180) -> SafeString:
    """False-prefetch rate (upper bound) and hit rate against the prefetch confidence cut."""
    pad_l, pad_b, pad_t = 40, 22, 8
    plot_w, plot_h = width - pad_l - 10, height - pad_b - pad_t
    cuts = [f.cut for f in curve] or [0.5, 1.0]
    # The axis reaches the cut in force too: a small tenant's sits above the grid's last cut.
    lo, hi = min(cuts), max([*cuts, *(c for c in (current, suggested) if c is not None and c <= 1.0)])

    def x(cut: float) -> float:
        return pad_l + plot_w * (cut - lo) / ((hi - lo) or 1)

    def y(rate: float) -> float:
        return pad_t + plot_h * (1 - rate)

    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="Estimated false-prefetch rate and hit rate by prefetch confidence" '
             f'xmlns="http://www.w3.org/2000/svg">',
             f'<text x="{pad_l - 6}" y="{pad_t + 8}" class="label" text-anchor="end">100%</text>',
             f'<text x="{pad_l - 6}" y="{pad_t + plot_h}" class="label" text-anchor="end">0%</text>',
             f'<text x="{pad_l}" y="{height - 4}" class="label">{lo:.2f}</text>',
             f'<text x="{pad_l + plot_w}" y="{height - 4}" class="label" text-anchor="end">{hi:.2f}</text>']
    for key, colour, name in (("false_rate_upper", "#b3261e", "false prefetch (upper bound)"),
                              ("hit_rate", "#2f6f4f", "hits kept")):
        points = " ".join(f"{x(f.cut):.1f},{y(getattr(f, key)):.1f}" for f in curve)
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2">'
                     f'<title>{name}</title></polyline>')
    for cut, dash, name in ((current, "4 3", "now"), (suggested, "", "suggested")):
        if cut is not None and lo <= cut <= hi:
            parts.append(f'<line x1="{x(cut):.1f}" x2="{x(cut):.1f}" y1="{pad_t}" y2="{pad_t + plot_h}" '
                         f'stroke="#333" stroke-dasharray="{dash}"><title>{name}: {cut:.2f}</title></line>')
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - numbers only
