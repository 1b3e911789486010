"""``dpamp filter LOG``: replay a log of adaptively chosen steps against a privacy filter and
say where the budget ran out (docs/filters.md).

    dpamp filter steps.jsonl --epsilon 2 --delta 1e-6 [--method rdp|zcdp|gdp|advanced|rruv|basic]
                 [--step-delta D] [--stop] [--json]

The log is JSON lines, one step per line (blank lines and lines starting with # are skipped):

    {"noise_multiplier": 1.1, "sample_rate": 0.004}     a DP-SGD step: Gaussian noise of std
                                                        z x the clipping norm on a Poisson
                                                        sample (add/remove; rate 1 = full batch)
    {"type": "Laplace", "scale": 2.0, ...}              any dpamp mechanism as dp.to_json
                                                        writes it
    either may carry "repeat": n                        the same step n times

Each step is offered to ``dp.Filter(epsilon, delta, method)`` in order; a refused step is not
charged and the replay goes on (an analyst may follow a refusal with a cheaper step), unless
``--stop``. The answer: how many steps fit, how many were refused, the line of the first
refusal (where the budget ran out) and the fraction of the budget left.
"""
from __future__ import annotations

import json

from ._args import delta_type, epsilon_type


def read_log(path: str) -> list[tuple[int, object, int]]:
    """[(line number, mechanism, repeat)] of a JSON-lines log; errors name the line."""
    from ..core import validate as V
    from ..io.serialize import from_dict
    from ..mechanisms import Gaussian
    from ..core.sampling import Poisson
    steps = []
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                d = json.loads(text)
                if not isinstance(d, dict):
                    raise ValueError("a step is a JSON object")
                repeat = V.integer("repeat", d.pop("repeat", 1), low=1)
                if "noise_multiplier" in d:
                    z = V.positive("noise_multiplier", d.pop("noise_multiplier"))
                    q = V.probability("sample_rate", d.pop("sample_rate", 1.0), low_open=True)
                    if d:
                        raise ValueError(f"unknown keys {sorted(d)}")
                    g = Gaussian(z)
                    m: object = g if q == 1.0 else g.subsample(Poisson(q))
                else:
                    m = from_dict(d)
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}, line {no}: {e}") from None
            steps.append((no, m, repeat))
    if not steps:
        raise ValueError(f"{path}: no steps")
    return steps


def replay(steps, f, stop: bool) -> dict:
    """Offer every step to the filter ``f``; the tally."""
    from ..mechanisms.family import describe
    accepted = refused = 0
    first = None
    for no, m, repeat in steps:
        for k in range(repeat):
            if f.try_spend(m):
                accepted += 1
                continue
            refused += 1
            if first is None:
                first = {"line": no, "step": accepted + refused, "repeat_index": k + 1,
                         "mechanism": describe(m)}
            if stop:
                return {"accepted": accepted, "refused": refused, "first_refused": first}
    return {"accepted": accepted, "refused": refused, "first_refused": first}


def cmd_filter(args):
    from ..accounting.filters import Filter
    f = Filter(args.epsilon, args.delta, method=args.method, step_delta=args.step_delta)
    tally = replay(read_log(args.log), f, args.stop)
    tally.update(epsilon=args.epsilon, delta=args.delta, method=args.method,
                 remaining=f.remaining, theorem=f.theorem)
    if args.json:
        print(json.dumps(tally))
        return
    from ..core.rounding import fmt
    print(f"budget (epsilon {fmt(args.epsilon)}, delta {fmt(args.delta)}), {args.method} filter: "
          f"{tally['accepted']} steps fit, {tally['refused']} refused")
    first = tally["first_refused"]
    if first is None:
        print(f"every step fits; {f.remaining:.1%} of the budget is left")
    else:
        rep = f" (repeat {first['repeat_index']})" if first["repeat_index"] > 1 else ""
        print(f"the budget ran out at line {first['line']}{rep}, step {first['step']}: "
              f"{first['mechanism']}; {f.remaining:.1%} of the budget is left")
    print(f"valid under full adaptivity by: {f.theorem}")


def add_parser(sub) -> None:
    from ..accounting.filters.filter import METHODS
    p = sub.add_parser("filter", help="replay a log of adaptive steps (JSON lines) against a "
                                      "privacy filter: where the budget runs out "
                                      "(docs/filters.md)")
    p.add_argument("log", help="JSON lines, one step a line: {\"noise_multiplier\": z, "
                               "\"sample_rate\": q} or a dpamp mechanism's JSON; "
                               "\"repeat\": n optional")
    p.add_argument("--epsilon", type=epsilon_type, required=True)
    p.add_argument("--delta", type=delta_type, required=True)
    p.add_argument("--method", default="rdp", choices=METHODS + ("pld", "profile"),
                   help="the filter (default rdp); pld and profile are refused with the reason")
    p.add_argument("--step-delta", type=float, default=None,
                   help="advanced/rruv/basic: the delta_t of a step that is neither pure nor "
                        "an (epsilon, delta) mechanism")
    p.add_argument("--stop", action="store_true", help="stop at the first refused step")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_filter)
