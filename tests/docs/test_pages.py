"""What the documentation says about the repository is true: every file or folder of the project
a page names exists, and the README stays a README (the manual is the site)."""

from __future__ import annotations

import re

from tests.docs.blocks import ROOT

# A path ends where the text does (a pattern such as `tests/metrics/scorers/test_<name>.py` names none).
PATH = re.compile(
    r"(?<![\w./-])((?:annotations|metrics|workbench|tests|bench|templates|static|docs|deploy)/[\w./-]*[\w/])(?![<\w./-])"
)
# Pages left out of the check (none: every page, docs/architecture.md included).
NOT_YET: set[str] = set()


def _pages():
    return [p for p in sorted((ROOT / "docs").rglob("*.md")) if p.name not in NOT_YET] + [ROOT / "README.md"]


def test_every_path_a_page_names_exists():
    missing = [
        f"{page.relative_to(ROOT)}: {m.group(1)}"
        for page in _pages()
        for m in PATH.finditer(page.read_text(encoding="utf-8"))
        if not (ROOT / m.group(1).rstrip(".")).exists()
    ]
    assert missing == []


def test_the_readme_is_short_and_points_to_the_docs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    for needed in (
        "make run",
        "make test",
        "make docs",
        "docs/tutorials/first-study.md",
        "## How to cite",
        "## Licence",
    ):
        assert needed in text, needed
