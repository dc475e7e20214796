"""Plot geometry for the report's inline SVGs: numbers in, shapes (rects, a path, ticks)
out. The template draws them; no script runs in the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from docpilot_runtime.evaluate.figures import Band
from docpilot_runtime.report.data import Day

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 68, 28, 12, 36


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    css: str  # the class that colours it
    title: str  # the tooltip: the exact figure


@dataclass(frozen=True)
class Tick:
    x: float
    y: float
    text: str
    anchor: str = "middle"  # SVG text-anchor


@dataclass(frozen=True)
class Plot:
    title: str
    width: int = WIDTH
    height: int = HEIGHT
    rects: tuple[Rect, ...] = ()
    path: str = ""  # an SVG path "d" for a line, "" for none
    dots: tuple[tuple[float, float, str], ...] = ()
    x_ticks: tuple[Tick, ...] = ()
    y_ticks: tuple[Tick, ...] = ()
    legend: tuple[tuple[str, str], ...] = field(default=())  # (css class, label)
    left: int = LEFT
    right: int = RIGHT
    top: int = TOP
    bottom: int = BOTTOM

    @property
    def empty(self) -> bool:
        return not self.rects and not self.path and not self.dots


def _plot_box() -> tuple[float, float, float, float]:
    return LEFT, TOP, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


def _y_ticks(top_value: float, fmt: str) -> tuple[Tick, ...]:
    x0, y0, _, h = _plot_box()
    return tuple(
        Tick(x0 - 6, y0 + h - h * i / 4, fmt.format(top_value * i / 4), "end")
        for i in range(5)
    )


def _bar_slots(days: tuple[Day, ...]) -> tuple[float, float]:
    _, _, w, _ = _plot_box()
    slot = w / max(len(days), 1)
    return slot, max(min(slot * 0.7, 48.0), 2.0)


def _day_ticks(days: tuple[Day, ...]) -> tuple[Tick, ...]:
    x0, y0, _, h = _plot_box()
    slot, _ = _bar_slots(days)
    every = max(1, len(days) // 8)
    return tuple(
        Tick(x0 + slot * (i + 0.5), y0 + h + 16, day.date[5:])
        for i, day in enumerate(days)
        if i % every == 0
    )


def rates_plot(days: tuple[Day, ...]) -> Plot:
    """Per day, the share of gated turns answered and refused, stacked to 100 %."""
    x0, y0, _, h = _plot_box()
    slot, bar = _bar_slots(days)
    rects = []
    for i, day in enumerate(days):
        gated = day.answered + day.refused
        if not gated:
            continue
        x = x0 + slot * i + (slot - bar) / 2
        answered = h * day.answered / gated
        refused = h - answered
        if answered:
            rects.append(
                Rect(x, y0 + refused, bar, answered, "answered",
                     f"{day.date}: {day.answered} of {gated} answered")
            )
        if refused:
            rects.append(
                Rect(x, y0, bar, refused, "refused",
                     f"{day.date}: {day.refused} of {gated} refused")
            )
    return Plot(
        title="Answered and refused, per day",
        rects=tuple(rects),
        x_ticks=_day_ticks(days),
        y_ticks=_y_ticks(100, "{:.0f} %"),
        legend=(("answered", "answered or passages"), ("refused", "refused")),
    )


def cost_plot(days: tuple[Day, ...]) -> Plot:
    """Model spend per day in US dollars."""
    x0, y0, _, h = _plot_box()
    slot, bar = _bar_slots(days)
    top = max((d.cost_micro_usd for d in days), default=0) or 1
    rects = []
    for i, day in enumerate(days):
        if not day.cost_micro_usd:
            continue
        height = max(h * day.cost_micro_usd / top, 1.0)
        rects.append(
            Rect(x0 + slot * i + (slot - bar) / 2, y0 + h - height, bar, height, "cost",
                 f"{day.date}: ${day.cost_micro_usd / 1e6:.4f}")
        )
    return Plot(
        title="Model cost per day (USD)",
        rects=tuple(rects),
        x_ticks=_day_ticks(days),
        y_ticks=_y_ticks(top / 1e6, "${:.4f}"),
        legend=(("cost", "cost"),),
    )


def confidence_plot(points: tuple[tuple[int, int], ...]) -> Plot:
    """Each turn's retrieval confidence (0-100) against its time, joined in order."""
    x0, y0, w, h = _plot_box()
    if not points:
        return Plot(title="Retrieval confidence over time", y_ticks=_y_ticks(100, "{:.0f}"))
    first, last = points[0][0], points[-1][0]
    span = max(last - first, 1)
    # One turn, or turns in the same millisecond: spread them evenly instead.
    spread = last == first
    xy = []
    for i, (ms, confidence) in enumerate(points):
        fraction = i / max(len(points) - 1, 1) if spread else (ms - first) / span
        x = x0 + (fraction * w if len(points) > 1 else w / 2)
        xy.append((round(x, 2), round(y0 + h - h * confidence / 100, 2)))
    path = "M " + " L ".join(f"{x} {y}" for x, y in xy) if len(xy) > 1 else ""
    dots = tuple((x, y, f"confidence {c}") for (x, y), (_, c) in zip(xy, points, strict=True))
    labels = {first: _when(first, span), last: _when(last, span)}
    x_ticks = (
        (
            Tick(xy[0][0], y0 + h + 16, labels[first], "start"),
            Tick(xy[-1][0], y0 + h + 16, labels[last], "end"),
        )
        if len(xy) > 1
        else (Tick(xy[0][0], y0 + h + 16, labels[first]),)
    )
    return Plot(
        title="Retrieval confidence over time",
        path=path,
        dots=dots,
        x_ticks=x_ticks,
        y_ticks=_y_ticks(100, "{:.0f}"),
        legend=(("confidence", "one dot per turn"),),
    )


def _when(ms: int, span_ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%H:%M:%S" if span_ms < 86_400_000 else "%m-%d %H:%M")


def calibration_plot(bands: tuple[Band, ...], mode: str) -> Plot:
    """Per retrieval-confidence band: the answer rate and recall@5 as bars, the share of
    questions the docs answer as dots, and the diagonal an honest confidence would follow."""
    x0, y0, w, h = _plot_box()
    slot = w / max(len(bands), 1)
    bar = slot * 0.3
    rects = []
    dots = []
    for i, band in enumerate(bands):
        left = x0 + slot * i
        span = f"confidence {band.low}-{band.high}, {band.count} questions"
        for offset, value, css, what in (
            (0.15, band.answered, "answered", "answered"),
            (0.55, band.recall_at_5, "recall", "recall@5"),
        ):
            if value is None:
                continue
            height = max(h * value, 1.0)
            rects.append(Rect(left + slot * offset, y0 + h - height, bar, height, css,
                              f"{span}: {what} {value * 100:.0f} %"))
        if band.should_answer is not None:
            dots.append((round(left + slot * 0.5, 2), round(y0 + h - h * band.should_answer, 2),
                         f"{span}: {band.should_answer * 100:.0f} % answerable"))
    x_ticks = tuple(
        Tick(x0 + slot * (i + 0.5), y0 + h + 16, f"{b.low}-{b.high} (n={b.count})")
        for i, b in enumerate(bands)
    )
    return Plot(
        title=f"Confidence calibration, {mode} mode",
        rects=tuple(rects),
        path=f"M {x0} {y0 + h} L {x0 + w} {y0}",
        dots=tuple(dots),
        x_ticks=x_ticks,
        y_ticks=_y_ticks(100, "{:.0f} %"),
        legend=(("answered", "answered"), ("recall", "recall@5"),
                ("confidence", "share the docs answer"), ("diagonal", "confidence = share")),
    )
