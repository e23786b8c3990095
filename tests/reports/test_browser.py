"""The run report in a real browser: headless Chromium at 1400x900, as a new user opens it.

Chromium comes from the distribution's packages (installed here when missing, as root) and
is driven by Playwright. The page must open offline without a console error, every link and
image must resolve, the three answers must be on the first screen, and every figure's text
must be at least 10 px where the page shows it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import harness

VIEWPORT = {"width": 1400, "height": 900}
MIN_TEXT_PX = 10.0
#: Chromium's flags on this closed network (its background connections are refused)
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], check=False,
                       capture_output=True, timeout=900)
        found = shutil.which("chromium")
    if found is None:
        pytest.fail("Chromium is missing and could not be installed with "
                    "'apt-get install -y chromium'.")
    return found


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """A small grid with local and global methods, two forests, truth on one dataset."""
    out = tmp_path_factory.mktemp("browser") / "run"
    summary = harness.compare(
        datasets=["led", "diabetes"],
        models=["extra_trees[n_estimators=20,max_features=1,bootstrap=true]",
                "random_forest[n_estimators=20]"],
        methods=["mdi", "local_mdi", "saabas", "treeshap", "sobol_mda", "mda_bc"],
        seeds=[0], max_explain=60, out=out, jobs=1)
    assert summary.error == 0 and summary.timeout == 0
    return out


@pytest.fixture(scope="module")
def page(report):
    sync_api = pytest.importorskip("playwright.sync_api")
    executable = _chromium()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                             args=CHROMIUM_FLAGS)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            tab = context.new_page()
            problems: list[str] = []
            tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda e: problems.append(str(e)))
            tab.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
            tab.goto((report / "index.html").as_uri(), wait_until="load")
            tab.problems = problems
            yield tab
        finally:
            browser.close()


def test_the_page_opens_without_an_error_and_every_link_and_image_resolves(page, report):
    assert page.problems == []
    images = page.eval_on_selector_all(
        "img", "els => els.map(e => [e.getAttribute('src'), e.complete, e.naturalWidth])")
    assert images and all(complete and width > 0 for _, complete, width in images), images
    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    ids = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
    for href in links:
        if href.startswith("#"):
            assert href[1:] in ids, f"anchor {href} leads nowhere"
        else:
            assert (report / href).is_file(), f"link {href} leads to no file"


def test_the_three_answers_are_on_the_first_screen(page, tmp_path):
    page.screenshot(path=str(tmp_path / "first_screen.png"))
    for element in ("grid-line", "panel-relate", "panel-trust", "panel-cost"):
        box = page.locator(f"#{element}").bounding_box()
        assert box is not None, f"#{element} is missing"
        assert box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"], (element, box)
        assert box["x"] + box["width"] <= VIEWPORT["width"], (element, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
    line = page.locator("#grid-line").inner_text()
    assert "2 datasets × 2 models × 1 seeds × 6 methods = 24 cells: 24 done" in line


def test_every_figure_text_is_at_least_10_px_where_it_is_shown(page):
    figures = page.eval_on_selector_all("img", """els => els.map(e => {
        e.scrollIntoView();
        return [e.getAttribute('src'), e.getAttribute('data-min-font-px'),
                e.getBoundingClientRect().width, e.naturalWidth];
    })""")
    assert figures
    for src, font, shown, natural in figures:
        assert font is not None, f"{src} does not say how large its text is"
        assert float(font) * shown / natural >= MIN_TEXT_PX, (src, font, shown, natural)


def test_tables_filter_and_sort_in_the_page(page):
    table = page.locator("#panel-trust table")
    box = page.locator("#panel-trust input.filter")
    box.fill("treeshap")
    visible = table.locator("tr:visible td:nth-child(2)").all_inner_texts()
    assert visible == ["treeshap"]
    box.fill("")
    header = table.locator("th", has_text="method")
    header.click()
    names = table.locator("tr td:nth-child(2)").all_inner_texts()
    assert names == sorted(names)
    header.click()
    assert table.locator("tr td:nth-child(2)").all_inner_texts() == sorted(names, reverse=True)
