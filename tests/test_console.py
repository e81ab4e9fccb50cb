"""The review console in a real headless browser (Debian's Chromium through chromium-driver, driven by Selenium),
served by `python -m hindsight_cli console` itself, over the real Weaviate: a reviewer approves one item, rejects
another and edits a suspect, and the store and its audit trail change accordingly; no token, no page."""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import httpx
import pytest
import weaviate
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.wait import WebDriverWait
from starlette.testclient import TestClient

from hindsight_cli.review_console.labels import preferred_language
from hindsight_cli.review_console.web import ConsoleContext, build_console
from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.embedder import Embedder
from hindsight_insights.models import InsightStatus
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate, free_port
from testkit.system_packages import APT_HINT, CHROMEDRIVER, CHROMIUM
from tests.report_support import SeededDay, seed_day

pytestmark = pytest.mark.runtime  # version-agnostic: run once, on the default Weaviate (Makefile)

ROOT = Path(__file__).resolve().parent.parent
STARTUP_S = 180


@dataclass
class Console:
    url: str  # with the token, as printed
    base: str
    token: str
    process: subprocess.Popen[str]


@pytest.fixture
def seeded(store: InsightStore) -> SeededDay:
    return seed_day(store, datetime.now(UTC).date())


@pytest.fixture
def console(
    seeded: SeededDay, weaviate_server: LocalWeaviate, project_settings: Settings, tmp_path: Path
) -> Iterator[Console]:
    environment = {
        **os.environ,
        "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
        "HINDSIGHT_PROJECT": project_settings.project,
        "HINDSIGHT_WORKER_STATE_URL": f"sqlite:///{tmp_path / 'state.sqlite3'}",
        "PYTHONUNBUFFERED": "1",
    }
    stderr = (tmp_path / "console.stderr").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "hindsight_cli", "console", "--port", str(free_port()), "--reviewer", "ops-lin"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the console prints its address once it listens
        found = re.search(r"(http://127\.0\.0\.1:(\d+))/\?token=(\S+)", line)
        assert found, f"no address printed: {line!r}; stderr: {(tmp_path / 'console.stderr').read_text()}"
        yield Console(url=found.group(0), base=found.group(1), token=found.group(3), process=process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        stderr.close()


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[WebDriver]:
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.fail(f"Chromium and chromium-driver are needed: {APT_HINT}", pytrace=False)
    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager must not look for a driver: we name ours
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1800", "--lang=en-US"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def shows(browser: WebDriver, element_id: str, text: str) -> None:
    """Wait until the element says exactly this (a form's POST and redirect load a new page)."""

    def said(driver: WebDriver) -> bool:
        found = driver.find_elements(By.ID, element_id)
        try:
            return bool(found) and found[0].text == text
        except StaleElementReferenceException:
            return False

    WebDriverWait(browser, 30).until(said, f"#{element_id} never said {text!r}")


def item(browser: WebDriver, insight_id: object) -> str:
    return browser.find_element(By.ID, f"item-{insight_id}").text


def test_a_reviewer_approves_rejects_and_edits_in_the_browser(
    console: Console, browser: WebDriver, store: InsightStore, seeded: SeededDay, tmp_path: Path
) -> None:
    refund, invoice = seeded.pending
    browser.get(console.url)
    assert "token=" not in browser.current_url  # moved into a cookie
    assert browser.find_element(By.ID, "queue").text == "Review queue (3)"
    shown = item(browser, refund.id)
    assert "退款时限" in shown and "退款 3 个工作日到账" in shown and "Reason: a project-wide process rule" in shown
    suspect = item(browser, seeded.rule.id)
    assert "Status: suspect" in suspect and "Turns that blamed it (5)" in suspect, suspect
    assert "建议您更换一根新的充电线。" in suspect and "是根本开不了机" in suspect
    assert suspect.index(f"{seeded.day:%Y-%m-%d} 09:59") < suspect.index("s-old-40-9")  # newest first
    assert browser.find_element(By.ID, "report-corrections").text == "6"
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart rect.bar")) == 4
    browser.find_element(By.ID, f"item-{refund.id}").screenshot(str(tmp_path / "console-item.png"))
    browser.save_screenshot(str(tmp_path / "console.png"))
    assert (tmp_path / "console.png").stat().st_size > 10_000
    size = browser.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    whole = browser.execute_cdp_cmd(  # the whole page, today's report and its chart included
        "Page.captureScreenshot",
        {
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, **{k: size[k] for k in ("width", "height")}, "scale": 1},
        },
    )
    (tmp_path / "console-full.png").write_bytes(base64.b64decode(whole["data"]))

    approve = browser.find_element(By.ID, f"approve-{refund.id}")
    approve.find_element(By.XPATH, "..").find_element(By.NAME, "note").send_keys("checked with finance")
    approve.click()
    shows(browser, "flash", f"Approved: {refund.id}")
    browser.find_element(By.ID, f"reject-{invoice.id}").click()
    shows(browser, "flash", f"Rejected: {invoice.id}")
    shows(browser, "queue", "Review queue (1)")

    editor = browser.find_element(By.ID, f"edit-{seeded.rule.id}").find_element(By.XPATH, "..")
    action = editor.find_element(By.NAME, "action")
    action.clear()
    action.send_keys("当顾客描述手机故障时，记住：手机无法开机，不是无法充电。")
    browser.find_element(By.ID, f"edit-{seeded.rule.id}").click()
    shows(browser, "flash", f"Edited: {seeded.rule.id}")

    # The store, read back from Weaviate, and the same audit trail as the CLI's.
    assert store.get(refund.id).status is InsightStatus.ACTIVE
    assert store.get(invoice.id).status is InsightStatus.REJECTED
    assert store.get(seeded.rule.id).action == "当顾客描述手机故障时，记住：手机无法开机，不是无法充电。"
    decisions = [(e.action, e.actor, e.note) for e in store.audit.of(refund.id)]
    assert decisions == [("approve", "ops-lin", "checked with finance")]
    assert [(e.action, e.actor) for e in store.audit.of(invoice.id)] == [("reject", "ops-lin")]
    trail = [(e.action, e.actor) for e in store.audit.of(seeded.rule.id)]
    assert trail == [("suspect", "blame"), ("repair", "worker"), ("edit", "ops-lin")]

    browser.find_element(By.ID, "lang-zh").click()
    shows(browser, "queue", "审核队列 (1)")
    assert "每日报告" in browser.page_source and "归咎于它的回合 (5)" in browser.page_source
    browser.get(console.base + "/")
    shows(browser, "queue", "审核队列 (1)")  # the choice is kept


def test_no_token_no_console_and_no_form_without_its_csrf_value(
    console: Console, store: InsightStore, seeded: SeededDay
) -> None:
    refund = seeded.pending[0]
    assert httpx.get(console.base + "/").status_code == 401
    assert httpx.get(console.base + "/?token=not-the-token").status_code == 401
    assert httpx.post(console.base + f"/items/{refund.id}/approve", data={"note": "x"}).status_code == 401
    languages = {"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}
    with httpx.Client(base_url=console.base, headers=languages, timeout=60) as client:
        page = client.get(f"/?token={console.token}", follow_redirects=True)
        assert page.status_code == 200 and "审核控制台" in page.text and "退款时限" in page.text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
        assert csrf is not None and csrf.group(1) != console.token
        assert client.post(f"/items/{refund.id}/approve", data={"note": "forged"}).status_code == 403
        assert client.post(f"/items/{refund.id}/approve", data={"csrf": "0" * 64}).status_code == 403
        assert store.get(refund.id).status is InsightStatus.PENDING_REVIEW and store.audit.of(refund.id) == []
        # A decision the store refuses comes back as a message, nothing changed.
        refused = client.post(
            f"/items/{refund.id}/edit", data={"csrf": csrf.group(1), "confidence": "seven"}, follow_redirects=True
        )
        assert "Not done" in refused.text or "未完成" in refused.text
        assert "seven" in refused.text and store.get(refund.id).confidence == seeded.pending[0].confidence
        english = client.get("/?lang=en")
        assert "Review queue (3)" in english.text
    bearer = httpx.get(console.base + "/", headers={"Authorization": f"Bearer {console.token}"})
    assert bearer.status_code == 200


def test_accept_language_picks_chinese_or_english() -> None:
    assert preferred_language("zh-CN,zh;q=0.9,en;q=0.8") == "zh"
    assert preferred_language("en-GB,en;q=0.9,zh;q=0.5") == "en"
    assert preferred_language("fr-FR,zh-TW;q=0.4,en;q=0.3") == "zh"
    assert preferred_language("fr-FR") == "en" and preferred_language("") == "en"


def test_a_store_that_cannot_be_read_is_a_503_with_the_reason(
    weaviate_server: LocalWeaviate, settings: Settings, project_settings: Settings, embedder: Embedder
) -> None:
    lost: weaviate.WeaviateClient = connect_url(weaviate_server.settings(settings), weaviate_server.url)
    store = InsightStore.open(lost, project_settings, embedder)
    lost.close()  # as when Weaviate goes away under a running console
    web = build_console(
        ConsoleContext(store=store, reviewer="r", token="t0ken", cost=lambda day: None, today=lambda: date(2026, 12, 1))
    )
    with TestClient(web, base_url="http://127.0.0.1") as client:
        page = client.get("/", headers={"Authorization": "Bearer t0ken"})
        assert page.status_code == 503 and "Reload the page" in page.text and "Traceback" not in page.text
        assert client.get("/").status_code == 401
