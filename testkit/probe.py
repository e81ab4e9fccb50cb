"""The inner-API probe plugin (testkit/probe_plugin/): packaged with the real CLI, installed next to ours.

No tool of Hindsight Insights calls back into Dify yet, so this test-only plugin does: its `ask_llm` tool calls
`self.session.model.llm.invoke`, which the daemon relays to DIFY_INNER_API_URL. Installing it into the same daemon
proves the inner-API stand-in is wired and answers an LLM invocation in the shape the SDK accepts.
"""

from __future__ import annotations

import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

from testkit.runtimes import Toolchain

SOURCE = Path(__file__).resolve().parent / "probe_plugin"
PLUGIN_ID = "hindsight-insights/inner_api_probe"
PROVIDER = "inner_api_probe"


def package_probe(cli: Path, tools: Toolchain, workdir: Path) -> Path:
    """`dify plugin package` over a copy of the probe, pinned to the dify_plugin version this project locks."""
    staged = workdir / "inner_api_probe"
    shutil.copytree(SOURCE, staged, ignore=shutil.ignore_patterns("__pycache__"))
    (staged / "requirements.txt").write_text(f"dify-plugin=={version('dify_plugin')}\n")
    output = workdir / "inner_api_probe.difypkg"
    result = subprocess.run(
        [str(cli), "plugin", "package", str(staged), "-o", str(output)],
        env=tools.environ(),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"packaging the probe failed: {(result.stdout + result.stderr).strip()[-2000:]}")
    return output
