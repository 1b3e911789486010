"""``dpamp bernoulli``: Rényi-DP amplification by releasing k Bernoulli samples of a private
parameter theta in [c, 1-c]^d (Imola & Chaudhuri 2021; see :mod:`dpamp.amplification.bernoulli`).

    dpamp bernoulli --c 0.1 --d 2 --alpha 5 --epsilon 0.1 0.5 2
    dpamp bernoulli --c 0.1 --alpha 50 --epsilon 1 --exact            # certified Post (d = 1)
    dpamp bernoulli --c 0.1 --d 2 --alpha 5 --epsilon 2 --exact --max-cells 30000 --json
    dpamp bernoulli --c 0.1 --alpha 50 --figure1 fig1.png             # Imola & Chaudhuri 2021,
    Figure 1 dpamp bernoulli --c 0.1 --d 2 --sigma 1 --steps 50 --delta 1e-5     # composed
    guarantee

One row per (alpha, epsilon): the base mechanism's RDP epsilon at that order goes in, and out
come the lower bound of Imola & Chaudhuri 2021, eqs. 5/7, the Hoeffding lower bound (Thm 2), the
upper bound min(epsilon, d k r_alpha(c)) (Thm 5) and, with ``--exact``, the certified bracket
[value, upper] on Post itself (Thms 1, 3) with whether it met the tolerance.

With ``--delta`` (and ``--sigma``, the base mechanism's noise): the (epsilon, delta) guarantee of
``--steps`` runs of the Gaussian (``--laplace``: Laplace) mechanism followed by Bernoulli
sampling, with its proven lower bound (the threshold witness, docs/bernoulli.md).
"""
from __future__ import annotations

import json

import numpy as np

from ._args import delta_type, epsilon_type


def bracket_rows(c, d, k, alphas, epsilons, *, exact=False, rtol=None, max_cells=None,
                 starts=8) -> list[dict]:
    """The rows ``dpamp bernoulli`` prints (also its ``--json`` output): one dict per
    (alpha, epsilon) with the closed-form bounds and, if ``exact``, the certified bracket."""
    from ..amplification import bernoulli as B
    a = np.asarray(alphas, dtype=float).ravel()
    e = np.asarray(epsilons, dtype=float).ravel()
    aa, ee = (x.ravel() for x in np.meshgrid(a, e, indexing="ij"))
    cols = {"lower": B.lower_bound(ee, aa, c, d, k),
            "hoeffding": B.hoeffding_lower_bound(ee, aa, c, d, k),
            "upper": B.upper_bound(ee, aa, c, d, k)}
    if exact:
        r = B.exact(ee, aa, c, d, k, rtol=rtol, max_cells=max_cells, starts=starts)
        cols.update(exact_value=r.value, exact_upper=r.upper, certified=r.certified)
    rows = []
    for i in range(aa.size):
        row = {"alpha": float(aa[i]), "epsilon": float(ee[i])}
        for name, col in cols.items():
            v = np.asarray(col).ravel()[i]
            row[name] = bool(v) if name == "certified" else float(v)
        rows.append(row)
    return rows


def composed_guarantee(args):
    """The Guarantee of ``--steps`` runs of the base mechanism then Bernoulli sampling."""
    import dpamp as dp
    if args.sigma is None:
        raise ValueError("--delta needs --sigma (the base mechanism's noise: Gaussian standard "
                         "deviation, or Laplace scale with --laplace)")
    from ..core import validate as V
    V.integer("--steps", args.steps, low=1)
    family = dp.Laplace if args.laplace else dp.Gaussian
    base = family(args.sigma, args.sensitivity)
    mech = base.post_process(dp.BernoulliSampling(args.c, args.d, args.k))
    return (mech * args.steps).epsilon(args.delta)


def cmd_bernoulli(args):
    from ..amplification import bernoulli as B
    if args.delta is not None:
        g = composed_guarantee(args)
        print(json.dumps(g.as_dict()) if args.json else g)
        return
    if args.alpha is None:
        raise ValueError("give --alpha (with --epsilon or --figure1), or --delta with --sigma")
    if args.figure1 is not None:
        B.plot_figure1(args.figure1, c=args.c, d=args.d, alpha=args.alpha[0], k=args.k,
                       epsilon=args.epsilon, with_exact=True if args.exact else None)
        print(f"wrote {args.figure1}")
        return
    if args.epsilon is None:
        raise ValueError("give --epsilon (the base mechanism's RDP at each --alpha), or "
                         "--figure1 PATH")
    rows = bracket_rows(args.c, args.d, args.k, args.alpha, args.epsilon, exact=args.exact,
                        rtol=args.rtol, max_cells=args.max_cells, starts=args.starts)
    if args.json:
        print(json.dumps(rows))
        return
    head = f"{'alpha':>8} {'epsilon':>10} {'lower':>12} {'hoeffding':>12} {'upper':>12}"
    if args.exact:
        head += f" {'Post in':>27} certified"
    print(f"Bernoulli sampling (Imola & Chaudhuri 2021): c = {args.c:g}, d = {args.d}, "
          f"k = {args.k}")
    print(head)
    from ..core.rounding import round_down as dn, round_up as up   # lower bounds down, upper up
    for r in rows:
        line = (f"{r['alpha']:8g} {r['epsilon']:10g} {dn(r['lower'], 6):>12s} "
                f"{dn(r['hoeffding'], 6):>12s} {up(r['upper'], 6):>12s}")
        if args.exact:
            line += (f" [{dn(r['exact_value'], 6)}, {up(r['exact_upper'], 6)}]".rjust(28)
                     + f" {'yes' if r['certified'] else 'no'}")
        print(line)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("bernoulli", help="RDP amplification by Bernoulli sampling of a "
                                                "private parameter (Imola & Chaudhuri 2021)")
    p.add_argument("--c", type=float, required=True,
                   help="theta lies in [c, 1-c]^d, c in [0, 1/2)")
    p.add_argument("--d", type=int, default=1, help="dimension of theta (default 1)")
    p.add_argument("--k", type=int, default=1, help="samples per coordinate (default 1)")
    p.add_argument("--alpha", type=float, nargs="+", default=None, help="Rényi order(s) > 1")
    p.add_argument("--epsilon", type=epsilon_type, nargs="+", default=None,
                   help="the base mechanism's RDP epsilon at each order (several: one row "
                        "each; with --figure1, the epsilon grid)")
    p.add_argument("--exact", action="store_true",
                   help="also the certified bracket on Post itself (d = 1: k <= 2000; "
                        "d = 2, 3: (k+1)^d <= 64)")
    p.add_argument("--rtol", type=float, default=None,
                   help="relative width at which --exact stops (default 1e-6 for d = 1, "
                        "2e-2 for d > 1)")
    p.add_argument("--max-cells", type=int, default=None,
                   help="cell budget of --exact per (alpha, epsilon) (default 200000 for "
                        "d = 1, 6000 for d > 1; more narrows the bracket)")
    p.add_argument("--starts", type=int, default=8,
                   help="random starts of the local search for d > 1 (default 8)")
    p.add_argument("--figure1", metavar="PATH", default=None,
                   help="draw Figure 1 of Imola & Chaudhuri 2021 (Post, lower bound, "
                        "asymptote, post-processing bound against epsilon) at the first "
                        "--alpha to PATH")
    p.add_argument("--delta", type=delta_type, default=None,
                   help="print the (epsilon, delta) guarantee of --steps runs of a Gaussian "
                        "(or --laplace) base mechanism followed by the sampling, with its lower "
                        "bound")
    p.add_argument("--sigma", type=float, default=None,
                   help="base noise for --delta: Gaussian standard deviation (Laplace scale "
                        "with --laplace)")
    p.add_argument("--laplace", action="store_true", help="Laplace base mechanism for --delta")
    p.add_argument("--sensitivity", type=float, default=1.0,
                   help="base mechanism's sensitivity for --delta (default 1)")
    p.add_argument("--steps", type=int, default=1, help="compositions for --delta (default 1)")
    p.add_argument("--json", action="store_true", help="print the rows (or the guarantee) as "
                                                       "JSON")
    p.set_defaults(func=cmd_bernoulli)
