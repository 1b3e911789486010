"""A tolerance the method could not reach is said in every output, beside the numbers: the
Guarantee (``tol_missed``), the command line's text and JSON, the report and calibrations."""
from __future__ import annotations

import json

import dpamp as dp
from dpamp import cli
from dpamp.core.guarantee import Guarantee

#: random allocation of Gaussian(5) over 2 steps at delta 1e-12: the PLD's bracket stops
#: narrowing (its parts' own bounds decide it), so tol is not met
MISSED = ["--sigma", "5", "--sampler", "allocation", "--batch-size", "1", "--dataset-size",
          "2", "--epochs", "1", "--delta", "1e-12"]


def test_the_status_is_typed():
    g = Guarantee(1.0, 1e-5, 0.9, "rdp", note="free text", tol_met=False,
                  tol_why="pld: 7 grid refinements did not reach tol")
    assert g.tol_missed == "pld: 7 grid refinements did not reach tol"
    assert abs(g.width - 0.1) < 1e-15 and g.as_dict()["tol_met"] is False
    # a phrase in the note is not a status
    assert Guarantee(1.0, 1e-5, 0.9, "pld", note="did not reach tol").tol_missed == ""
    m = dp.Gaussian(5.0).subsample(dp.RandomAllocation(1, 2))
    g = m.epsilon(1e-12, method="pld")
    assert g.tol_met is False and g.tol_missed.startswith("pld: ")
    assert dp.Gaussian(1.0).epsilon(1e-5, method="pld").tol_met is True
    assert dp.Gaussian(1.0).epsilon(1e-5, method="rdp").tol_met is None


def test_the_command_line_says_tol_was_not_met(capsys):
    assert cli.main(["epsilon", *MISSED]) in (0, None)
    out = capsys.readouterr().out
    assert "tol not met" in out and "pld:" in out
    assert cli.main(["epsilon", *MISSED, "--json"]) in (0, None)
    d = json.loads(capsys.readouterr().out)
    assert "did not reach tol" in d["note"]


def test_a_met_tol_prints_no_such_line(capsys):
    assert cli.main(["epsilon", "--noise-multiplier", "1.0", "--sample-rate", "0.01",
                     "--steps", "100", "--delta", "1e-5"]) in (0, None)
    assert "tol not met" not in capsys.readouterr().out


def test_the_report_and_compare_say_it(capsys):
    assert cli.main(["compare", *MISSED]) in (0, None)
    assert "pld: tol not met" in capsys.readouterr().out
    m = dp.Gaussian(5.0).subsample(dp.RandomAllocation(1, 2))
    from dpamp.io.report import markdown, text
    rows = [("pld", m.epsilon(1e-12, method="pld"), 0.0)]
    assert "tol not met" in markdown(rows, 1e-12, mechanism=m)
    assert "tol not met" in text(rows, 1e-12, mechanism=m)
