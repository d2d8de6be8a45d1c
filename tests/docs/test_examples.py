"""Every example in README.md and docs/ runs and prints what the page shows (DOCS.md, "Examples that cannot
lie"): one test per page, in its own sandbox (tests/docs/runner.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import PageError, page_setup, pages, parse
from tests.docs.runner import run_page, sandbox

ROOT = Path(__file__).resolve().parent.parent.parent
PAGES = pages(ROOT)


def test_the_pages_are_found() -> None:
    assert ROOT / "README.md" in PAGES


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples(page: Path, tmp_path: Path) -> None:
    name = str(page.relative_to(ROOT))
    text = page.read_text(encoding="utf-8")
    try:
        blocks, setup = parse(text, name), page_setup(text, name)
    except PageError as error:
        pytest.fail(str(error), pytrace=False)
    failed = run_page(blocks, sandbox(tmp_path, checkout=ROOT if setup == "checkout" else None))
    if failed:
        pytest.fail(failed, pytrace=False)
