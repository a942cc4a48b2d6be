"""The README leads to every page of docs/, and no relative link in the docs points nowhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _relative_targets(page: Path) -> list[str]:
    targets = [m.group(1) for m in LINK.finditer(page.read_text(encoding="utf-8"))]
    return [t for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_the_readme_links_every_page_of_the_docs() -> None:
    linked = {(ROOT / t.split("#")[0]).resolve() for t in _relative_targets(ROOT / "README.md")}
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not missing, f"README.md does not link {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_point_at_files_that_exist(page: Path) -> None:
    broken = [
        target
        for target in _relative_targets(page)
        if not (page.parent / target.split("#")[0]).exists()
    ]
    assert not broken, f"{page.name} links to missing files: {broken}"
