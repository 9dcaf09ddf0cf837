"""The demo in a real browser: Debian's Chromium driven by Playwright (never `playwright install`).

Fills the inputs, clicks Evaluate, reads the rendered results table, checks a disabled metric shows its
reason, uploads a bad file and sees the error, and saves screenshots under artifacts/ (git-ignored).
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

import dialeval
from dialeval import registry, ui
from dialeval.resources import examples_dir

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    from dialeval.demo import launch

    limits = ui.Limits(max_upload_bytes=4000)
    demo = launch(port=free_port(), block=False, examples_dir=examples_dir(), limits=limits)
    try:
        yield demo.local_url
    finally:
        demo.close()


@pytest.fixture(scope="module")
def page(server):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).is_file(), "Chromium is missing: apt-get install -y chromium (install.sh does this)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.set_default_timeout(60_000)
        pg.goto(server, wait_until="domcontentloaded")
        pg.wait_for_selector("#evaluate")
        # the first bundled example fills the boxes when the page loads
        pg.wait_for_function("() => (document.querySelector('#responses textarea')?.value || '').length > 0")
        yield pg
        browser.close()


def results_table(page) -> dict[tuple[str, str], tuple[str, str]]:
    """The rendered rows of the results table (Gradio 6 draws them as virtual rows, role=row)."""
    out = {}
    for row in page.locator("#results [role=row]").all():
        cells = [c.inner_text().strip() for c in row.locator("td, [role=gridcell]").all()]
        if len(cells) >= 4:
            out[(cells[0], cells[1])] = (cells[2], cells[4])
    return out


ROUNDED = 5e-5  # the table shows 4 decimals; the JSON keeps full precision


def untick_model_metrics(page) -> None:
    for name in (d.name for d in registry.declarations().values() if d.needs_model or d.models):  # model-backed
        box = page.locator(f"#use-{name} input")
        if box.count() and box.is_checked() and box.is_enabled():
            box.uncheck()


def test_fill_click_and_read_results(page):
    ARTIFACTS.mkdir(exist_ok=True)
    responses = ["i like tea .", "i like coffee .", "no thanks"]
    page.locator("#responses textarea").fill("\n".join(responses))
    untick_model_metrics(page)  # lexical metrics + DialSpk only: fast and exact on any machine
    page.locator("#evaluate").click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('metrics computed')")
    page.wait_for_function("() => (document.querySelector('#results')?.innerText || '').includes('distinct_1')")
    rows = results_table(page)
    # Hand-computed: 10 unigrams, 7 distinct; 7 bigrams, 6 distinct ("i like" twice).
    assert float(rows[("distinct_n", "distinct_1")][0]) == pytest.approx(0.7)
    assert rows[("distinct_n", "distinct_2")][0] == "0.8571"  # 6/7 shown rounded
    direct = dialeval.load("ent_n").compute(predictions=responses)
    assert float(rows[("ent_n", "ent_1")][0]) == pytest.approx(direct["ent_1"], abs=ROUNDED)
    assert rows[("ent_n", "ent_1")][1] == direct["signature"]
    # the first example's DialSpk: the nearest-mention baseline names every speaker of its two stories
    assert float(rows[("dialspk", "dac")][0]) == 1.0 and float(rows[("dialspk", "sac")][0]) == 1.0
    assert rows[("ent_n", "ent_1")] and page.locator("#results").inner_text().count("bits") >= 3  # ent_1..3
    page.screenshot(path=str(ARTIFACTS / "space_demo_results.png"), full_page=True)
    assert (ARTIFACTS / "space_demo_results.png").stat().st_size > 10_000


PROGRESS = ".progress-text, .eta-bar, .progress-level, .meta-text, .meta-text-center"


def test_evaluate_shows_one_progress_display_then_scrolls_to_results(page, monkeypatch):
    """While it runs: the button is disabled and exactly one progress display is in view (beside it);
    after: the button is back and the results table is in view."""
    import time

    from dialeval.ui import blocks

    real = blocks.run_metric

    def slow(*args, **kwargs):  # long enough to look at the page while it runs
        time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(blocks, "run_metric", slow)
    page.locator("#responses textarea").fill("a b\nb c\nc d")
    untick_model_metrics(page)
    page.evaluate("window.scrollTo(0, 0)")
    page.locator("#evaluate").click()
    page.wait_for_function("() => document.querySelector('#evaluate').disabled")
    page.wait_for_selector(f"#status :is({PROGRESS})", state="visible")
    in_view = page.evaluate("""(sel) => [...document.querySelectorAll(sel)].filter(e => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && r.bottom > 0 && r.top < window.innerHeight
            && getComputedStyle(e).visibility !== 'hidden';
    }).map(e => e.closest('[id]')?.id)""", PROGRESS)
    assert in_view and set(in_view) == {"status"}, in_view  # one display, beside the button
    # names the metric running, once the first progress update has reached the page (it lags the display)
    page.wait_for_function(r"() => /\w+ \(\d of 5\)/.test(document.querySelector('#status')?.innerText || '')")
    assert re.search(r"\w+ \(\d of 5\)", page.locator("#status").inner_text())
    page.screenshot(path=str(ARTIFACTS / "space_demo_running.png"))
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('metrics computed')")
    page.wait_for_function("() => !document.querySelector('#evaluate').disabled")
    page.wait_for_function("""() => { const r = document.querySelector('#results').getBoundingClientRect();
                                      return r.top >= -5 && r.top < window.innerHeight; }""")
    # Hand-computed: 6 unigrams (a b b c c d), 4 distinct
    assert float(results_table(page)[("distinct_n", "distinct_1")][0]) == pytest.approx(4 / 6, abs=ROUNDED)
    page.screenshot(path=str(ARTIFACTS / "space_demo_scrolled.png"))


def test_offline_model_metric_is_disabled_with_reason(page):
    box = page.locator("#use-nli_diversity input")
    assert box.is_disabled()
    assert re.search(r"not in the local Hugging Face cache", page.locator("#note-nli_diversity").inner_text())


@pytest.mark.parametrize("name, content, message", [
    ("image.jsonl", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image.jsonl looks like a binary file"),
    ("huge.txt", b"a long response line\n" * 400, "huge.txt is 8.4 KB; uploads are limited to 4 KB"),
    ("broken.jsonl", b'{"response": "fine"}\n{"response": \n', "broken.jsonl, line 2: invalid JSON"),
], ids=["binary", "oversize", "malformed"])
def test_bad_upload_shows_error(page, tmp_path, name, content, message):
    bad = tmp_path / name
    bad.write_bytes(content)
    page.locator("#upload input[type=file]").set_input_files(str(bad))
    page.wait_for_function("(m) => (document.querySelector('#status')?.innerText || '').includes(m)", arg=message)
    assert "Upload rejected" in page.locator("#status").inner_text()
    page.screenshot(path=str(ARTIFACTS / f"space_demo_bad_upload_{bad.stem}.png"), full_page=True)
    page.locator("#upload button[aria-label='Clear']").first.click()


def test_app_keeps_serving_after_bad_uploads(page):
    page.locator("#responses textarea").fill("a b\nb c")
    untick_model_metrics(page)
    page.locator("#evaluate").click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('metrics computed')")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#results [role=row]')].some(r => r.innerText.includes('0.75'))")
    assert float(results_table(page)[("distinct_n", "distinct_1")][0]) == 0.75


def test_an_upload_clears_the_boxes_it_does_not_fill(page, tmp_path):
    """Issue 34.3: the page opens on the first example (every box filled, DialSpk/DialGen ticked); an upload of
    responses empties the hidden speaker and turn boxes, so DialSpk/DialGen are skipped, not scored on the
    example's stories together with the upload."""
    page.locator("#load-example button, button:has-text('Load example')").first.click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('Example loaded')")
    upload = tmp_path / "mine.jsonl"
    upload.write_text('{"response": "a b"}\n{"response": "b c"}\n', encoding="utf-8")
    page.locator("#upload input[type=file]").set_input_files(str(upload))
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('Loaded mine.jsonl')")
    assert page.locator("#responses textarea").input_value() == "a b\nb c"
    assert page.locator("#sets textarea").input_value() == "" and page.locator("#dialogue textarea").input_value() == ""
    untick_model_metrics(page)
    for name in ("dialspk", "dialgen"):
        box = page.locator(f"#use-{name} input")
        if not box.is_checked():
            box.check()
    page.locator("#evaluate").click()
    page.wait_for_function("() => (document.querySelector('#status')?.innerText || '').includes('metrics computed')")
    status = page.locator("#status").inner_text()
    assert "dialspk: skipped" in status and "dialgen: skipped" in status, status
    assert float(results_table(page)[("distinct_n", "distinct_1")][0]) == 0.75
    page.locator("#upload button[aria-label='Clear']").first.click()


def test_local_model_path_enables_a_metric_and_every_plot_draws(page, tmp_path_factory):
    from dialeval.testing.roberta import tiny_nli_model

    model = str(tiny_nli_model(tmp_path_factory.mktemp("tiny_nli")))
    field = page.locator("#model-nli_diversity input")
    field.fill(model)
    field.press("Enter")
    page.wait_for_function("() => !document.querySelector('#use-nli_diversity input').disabled")
    box = page.locator("#use-nli_diversity input")
    if not box.is_checked():
        box.check()
    sem = page.locator("#use-sem_ent input")
    if sem.is_enabled() and not sem.is_checked():
        sem.check()
    page.locator("#sets textarea").fill("yes\nno\nmaybe\n\nsure\nsure thing")
    page.locator("#evaluate").click()
    page.wait_for_function("() => [...document.querySelectorAll('#results [role=row]')]"
                           ".some(r => r.innerText.includes('nli_diversity'))")
    rows = results_table(page)
    direct = dialeval.load("nli_diversity", model=model).compute(predictions=[["yes", "no", "maybe"],
                                                                              ["sure", "sure thing"]])
    assert float(rows[("nli_diversity", "nli_diversity")][0]) == pytest.approx(direct["nli_diversity"], abs=ROUNDED)
    assert rows[("nli_diversity", "nli_diversity")][1] == direct["signature"]
    if sem.is_checked():
        assert ("sem_ent", "sem_ent") in rows
    page.screenshot(path=str(ARTIFACTS / "space_demo_all_metrics.png"), full_page=True)
