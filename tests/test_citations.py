"""Every output names papers by authors and year, not by the file numbers the docstrings use."""
from __future__ import annotations

import re

import pytest

import dpamp as dp
from dpamp.core.citations import PAPERS, cite


@pytest.mark.parametrize("text, words", [
    ("004 Prop. 7 (PLD -> delta), Thm 9", "Steinke 2022, Prop. 7 (PLD -> delta), Thm 9"),
    ("000 Lemma 12 on 003 Thm 19", "Balle, Barthe & Gaboardi 2018, Lemma 12 on "
                                   "Wang, Balle & Kasiviswanathan 2019, Thm 19"),
    ("profile (004 Sec. 5)", "profile (Steinke 2022, Sec. 5)"),
    ("(002)", "(Balle, Barthe, Gaboardi & Geumlek 2019)"),
    ("a 2004 grid of 1000 points, 0.004", "a 2004 grid of 1000 points, 0.004"),
    ("", ""),
])
def test_cite(text, words):
    assert cite(text) == words


NUMBER = re.compile(r"(?<![\w.])00[0-4](?![\w.])")


def test_guarantees_name_their_sources_by_authors_and_year():
    step = dp.Gaussian(1.1).subsample(dp.Poisson(0.01))
    for g in (step.epsilon(1e-5), (step * 100).epsilon(1e-5, method="pld"),
              (step * 100).epsilon(1e-5, method="rdp"), (dp.Gaussian(1.0) * 10).delta(1.0, method="zcdp"),
              dp.Laplace(1.0, relation=dp.SUBSTITUTION).subsample(
                  dp.WithoutReplacement(10, 100)).epsilon(1e-5)):
        assert not NUMBER.search(g.source + g.note), g.source
        assert any(name in g.source for name in PAPERS.values()), g.source


def test_the_method_list_names_papers(capsys):
    from dpamp import cli
    assert cli.main(["methods"]) == 0
    out = capsys.readouterr().out
    assert not NUMBER.search(out) and "Steinke 2022" in out
