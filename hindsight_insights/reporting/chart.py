"""The report's chart as geometry: stacked bars of corrections per day by type, laid out here and drawn as inline SVG
by a template (prompts/report/chart.svg.j2). No script, no network: the page shows it as it is."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight_insights.reporting.daily import DayCounts

WIDTH, HEIGHT = 760, 260
LEFT, RIGHT, TOP, BOTTOM = 40, 10, 16, 46
COLOURS = {"factual": "#c0392b", "preference": "#e0a526", "process": "#16808d", "negative": "#34558b"}
OTHER_COLOURS = ("#7d5ba6", "#6b8e23", "#8c564b", "#6c757d")


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    day: str
    type: str
    count: int


@dataclass(frozen=True)
class Tick:
    x: float
    y: float
    text: str


@dataclass(frozen=True)
class LegendItem:
    x: float
    colour: str
    type: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    legend: list[LegendItem]
    plot_left: float
    plot_right: float
    baseline: float
    top: float
    total: int


def colour_of(kind: str, types: list[str]) -> str:
    if kind in COLOURS:
        return COLOURS[kind]
    others = [t for t in types if t not in COLOURS]
    return OTHER_COLOURS[others.index(kind) % len(OTHER_COLOURS)] if kind in others else OTHER_COLOURS[-1]


def _nice_max(value: int) -> int:
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000):
        if value <= step * 4:
            return step * 4
    return ((value + 999) // 1000) * 1000


def stacked_bars(days: list[DayCounts], types: list[str]) -> Chart:
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    baseline = float(TOP + plot_h)
    top_value = _nice_max(max((d.total for d in days), default=0) or 1)
    slot = plot_w / max(len(days), 1)
    bar_w = slot * 0.7
    bars: list[Bar] = []
    x_ticks: list[Tick] = []
    for index, day in enumerate(days):
        x = LEFT + index * slot + (slot - bar_w) / 2
        y = baseline
        for kind in types:
            count = day.by_type.get(kind, 0)
            if not count:
                continue
            height = plot_h * count / top_value
            y -= height
            bars.append(
                Bar(
                    round(x, 1),
                    round(y, 1),
                    round(bar_w, 1),
                    round(height, 1),
                    colour_of(kind, types),
                    day.day.isoformat(),
                    kind,
                    count,
                )
            )
        if index % 5 == 0 or index == len(days) - 1:
            x_ticks.append(Tick(round(x + bar_w / 2, 1), baseline + 14, day.day.strftime("%m-%d")))
    y_ticks = [Tick(LEFT - 6, round(baseline - plot_h * step / 4, 1), str(top_value * step // 4)) for step in range(5)]
    legend = [LegendItem(LEFT + i * 130, colour_of(kind, types), kind) for i, kind in enumerate(types)]
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        bars=bars,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        legend=legend,
        plot_left=LEFT,
        plot_right=WIDTH - RIGHT,
        baseline=baseline,
        top=TOP,
        total=sum(d.total for d in days),
    )
