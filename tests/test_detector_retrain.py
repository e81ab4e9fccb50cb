"""`hindsight_cli detector retrain` on a real store: reviewers' decisions on detector insights become labels, the
model is refitted and installed only when it is not worse on the held-out evaluation sets. The model file is a copy
in a temporary directory: the shipped one is never touched."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from hindsight_cli.app import app
from hindsight_cli.detector import ReviewLabel, retrain, review_labels
from hindsight_insights.config import Settings
from hindsight_insights.detector_model import MODEL_PATH, learned_detector
from hindsight_insights.governance.recording import record_turn
from hindsight_insights.models import InsightKind, InsightStatus, TurnDraft
from hindsight_insights.store import InsightStore
from hindsight_insights.store.review import ReviewQueue
from hindsight_insights.weaviate_server import LocalWeaviate
from scripts.train_detector import load_corpus


def said(store: InsightStore, session: str, message: str, answer: str) -> Any:
    draft = {"session_id": session, "user_id": "u-review", "scene": "ops", "user_message": message}
    detector = learned_detector(store.embedder, store.settings)
    return record_turn(store, TurnDraft.parse({**draft, "assistant_message": answer}), store.settings, None, detector)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reviewers_decisions_become_labels_and_retrain_installs_only_a_model_not_worse(
    store: InsightStore, weaviate_server: LocalWeaviate, project_settings: Settings, tmp_path: Path
) -> None:
    said(store, "s-a", "Reload nginx for me.", "Reloading nginx now.")
    process = said(store, "s-a", "Always run nginx -t before any reload, that is our change policy.", "Done.")
    said(store, "s-b", "Summarise the incident.", "Dear valued colleague, here is the summary.")
    preference = said(store, "s-b", "From now on give me incident summaries as bullet points, no greetings.", "OK.")
    queue = ReviewQueue(store)
    pending = [store.get(p.result.id) for p in process.learned if p.result.status == InsightStatus.PENDING_REVIEW]
    assert pending and pending[0].kind == InsightKind.PROCESS
    queue.approve(pending[0].id, "ops-lin", "yes, our policy")
    rejected = preference.learned[0].result
    queue.reject(rejected.id, "ops-lin", "not a standing wish")

    labels = {label.insight_id: label for label in review_labels(store)}
    assert labels[str(pending[0].id)].label == "process"
    assert labels[str(pending[0].id)].previous_assistant == "Reloading nginx now."
    assert labels[str(rejected.id)].label == "none"
    assert labels[str(rejected.id)].message.startswith("From now on")

    model = tmp_path / "detector_model.npz"
    shutil.copyfile(MODEL_PATH, model)
    environment = {
        "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
        "HINDSIGHT_PROJECT": project_settings.project,
        "COLUMNS": "200",
    }
    result = CliRunner().invoke(app, ["detector", "retrain", "--model", str(model)], env=environment)
    assert result.exit_code == 0, result.output
    assert "2 reviewed detector insight(s) as labels: none 1, process 1" in result.output
    assert "macro F1 on holdout: before" in result.output and "macro F1 on new-42: before" in result.output
    installed = "installed" in result.output and "NOT installed" not in result.output
    assert installed == (digest(model) != digest(MODEL_PATH))


def test_a_retrained_model_that_scores_worse_is_not_installed(tmp_path: Path) -> None:
    """Reviewers who call every factual and process correction of the corpus 'none' teach a worse model."""
    model = tmp_path / "detector_model.npz"
    shutil.copyfile(MODEL_PATH, model)
    wrong = [
        ReviewLabel(row["id"], "reject", "none", row["message"], row["previous_assistant"])
        for row in load_corpus()
        if row["label"] in ("factual", "process")
    ]
    result = retrain(wrong * 3, model)
    assert result.pooled_after < result.pooled_before and not result.installed
    assert digest(model) == digest(MODEL_PATH)
