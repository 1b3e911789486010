"""The documentation site builds with --strict (every nav page exists, every link and anchor
resolves, every API page's module is found by mkdocstrings), and its pages are what the nav
and the papers' table promise."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(out), "--config-file", str(ROOT / "mkdocs.yml")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def _text(path: Path) -> str:
    return re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))


def test_site_builds_strict(site):
    assert (site / "index.html").is_file()
    assert (site / "getting-started.html").is_file()


def test_api_pages_come_from_the_docstrings(site):
    text = _text(site / "api" / "mechanisms.html")
    assert "dpamp.mechanisms.gaussian" in text and "Gaussian" in text
    import dpamp.core.guarantee as G
    first = G.Guarantee.__doc__.strip().split()[:4]
    assert " ".join(first) in " ".join(_text(site / "api" / "vocabulary.html").split())
    # reST roles in the docstrings are shown as code (docs/_ext/rst_roles.py), not literally
    for page in (site / "api").glob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert ":func:" not in html and ":class:" not in html, page.name


def test_every_paper_has_a_page_with_its_citation(site):
    index = (ROOT / "docs" / "papers" / "index.md").read_text(encoding="utf-8")
    for number in ("000", "001", "002", "003", "004"):
        assert f"| {number} |" in index
    for arxiv in ("1807.01647", "1905.12264", "1808.00087", "2210.00597", "2502.08202",
                  "2602.17284", "2403.17673", "2411.04205", "2412.16802"):
        assert arxiv in index
    pages = sorted((ROOT / "docs" / "papers").glob("*.md"))
    assert len(pages) == 8
    for page in pages:
        assert (site / "papers" / page.with_suffix(".html").name).is_file()


def test_every_doc_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").rglob("*.md"):
        if "_ext" in page.parts:
            continue
        rel = page.relative_to(ROOT / "docs").as_posix()
        assert rel in nav, f"{rel} is not in mkdocs.yml's nav"


def test_user_docs_name_papers_not_file_numbers():
    # the numbers stay in docstrings and in the tables that map them (papers/index.md,
    # architecture.md); the guides name the papers by authors and year
    pattern = re.compile(r"(?<![\w./-])00[0-4](?: (?:Thm|Thms|Sec\.|Lemma|Prop\.|Cor\.|Alg)|\))")
    for page in (ROOT / "docs").glob("*.md"):
        if page.name == "architecture.md":
            continue
        hits = [line for line in page.read_text(encoding="utf-8").splitlines()
                if pattern.search(line)]
        assert not hits, f"{page.name}: {hits[:3]}"
    assert "paper 00" not in (ROOT / "README.md").read_text(encoding="utf-8")


def test_code_blocks_wrap_instead_of_overflowing(site):
    css = (site / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert "pre-wrap" in css
    assert "stylesheets/extra.css" in (site / "index.html").read_text(encoding="utf-8")
