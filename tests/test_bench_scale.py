"""The scale bench (bench/bench_scale.py) at a smoke size: every layout imports, searches through the plugin runtime and
a raw query, and prints real figures. No timing is asserted (targets are ratios the bench prints)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import bench_scale

NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


def row(output: str, path: str) -> tuple[float, float]:
    """p50 and p95 of a path's row in a timings table."""
    found = re.search(rf"{re.escape(path)} \| +{NUMBER} \| +{NUMBER} \|", output)
    assert found, f"no row for {path!r} in:\n{output}"
    return float(found[1]), float(found[2])


@pytest.mark.runtime  # the plugin through the daemon's protocol; RQ needs Weaviate 1.32+, so not in the 1.27 run
def test_bench_scale_smoke_prints_real_figures(dify_cli: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench_scale.main(
        [
            *("--fresh", "--no-restart"),
            *("--insights", "300", "--baseline", "100", "--pool", "100"),
            *("--projects", "20", "--project-insights", "20"),
            *("--tenant-projects", "20", "--tenant-insights", "10", "--wave", "10", "--max-active", "8"),
            *("--active-sample", "4", "--first-searches", "3", "--searches", "8", "--recall-queries", "10"),
        ]
    )
    output = capsys.readouterr().out

    imports = re.findall(
        rf"(\w+) import \((\d+) projects x (\d+)\): (\d+) objects in {NUMBER}s = (\d+) objects/s", output
    )
    assert {(layout, int(objects)) for layout, _, _, objects, _, _ in imports} >= {
        ("one", 100),
        ("one", 300),
        ("projects", 400),
        ("tenants", 200),
    }
    assert all(int(rate) > 0 for *_, rate in imports)

    for path in (
        "plugin runtime · 300",
        "raw hybrid · 300",
        "in process · 300",
        "plugin, threshold 0.17 · 300",
        "plugin runtime · 100",
        "plugin runtime · 300 RQ",
        "plugin runtime · 4 active of 20",
        "plugin runtime · active of 20",
        "plugin runtime · single project",
        "first search_insight · plugin",
        "first raw hybrid",
    ):
        p50, p95 = row(output, path)
        assert 0 < p50 <= p95

    assert len(re.findall(r"^target: .*: [0-9.]+x \(target <= [0-9.]+x\): (held|MISSED)$", output, re.M)) == 3
    assert re.search(
        rf"^in process / raw hybrid p95 at 300: {NUMBER}x; plugin / in process .*: {NUMBER}x$", output, re.M
    )
    memory = re.search(rf"uncompressed \| +{NUMBER} \| +{NUMBER} \| +{NUMBER} \|", output)
    compressed = re.search(rf"RQ 8 bits \| +{NUMBER} \| +{NUMBER} \| +{NUMBER} \|", output)
    assert memory and compressed, output
    for found in (memory, compressed):
        assert float(found[1]) > 50 and float(found[2]) > 50  # a Weaviate server's resident MiB
        assert 0.5 <= float(found[3]) <= 1.0  # recall@10 against exact results, 300 vectors
    created = re.search(
        rf"tenants projects: created in {NUMBER}s .* (\d+) deactivated by \d+ deactivate_idle sweeps in {NUMBER}s",
        output,
    )
    assert created and float(created[1]) > 0 and int(created[2]) > 0, output
