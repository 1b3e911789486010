"""Operational risk of DP-SGD plans: the time of a full risk summary (TPR at 3 FPRs, advantage,
GDP mu), cold per plan, and how the proven TPR compares with two shortcuts people use:

* the (eps, delta) shortcut TPR <= e^eps FPR + delta at dpamp's eps(1e-5) (valid, loose);
* the central-limit GDP of Bu, Dong, Long & Su (2020), mu_CLT = q sqrt(T (e^{1/sigma^2} - 1)),
  as in GDP accountants (an approximation: it can be below what an attack reaches).

    python benchmarks/bench_risk.py

(No peer library computes trade-off curves with bounds; the shortcuts are the comparison.)
"""
from __future__ import annotations

import math
import time

import numpy as np

import dpamp as dp
from dpamp.accounting import risk
from dpamp.profiles.tradeoff import gaussian_beta

PLANS = [  # (sigma, q, steps)
    (1.1, 256 / 60000, 14062),
    (0.8, 0.01, 1000),
    (2.0, 0.001, 100000),
    (0.6, 0.01, 10000),
]
FPR = np.array([1e-3, 1e-2, 1e-1])


def main() -> None:
    print(f"{'plan':>26s} {'time':>7s}  FPR: proven TPR [reached]  | e^eps FPR + delta | CLT")
    for s, q, T in PLANS:
        m = dp.Gaussian(s).subsample(dp.Poisson(q)) * T
        risk._CACHE.clear()
        t0 = time.perf_counter()
        summ = risk.summary(m)
        sec = time.perf_counter() - t0
        eps = float(m.epsilon(1e-5).epsilon)
        mu_clt = q * math.sqrt(T * math.expm1(1 / s ** 2))
        clt = 1 - gaussian_beta(FPR, mu_clt, upper=False)
        label = f"s={s} q={q:.3g} T={T}"
        for i, r in enumerate(summ["tpr_at_fpr"]):
            head = f"{label:>26s} {sec:6.2f}s" if i == 0 else " " * 34
            print(f"{head}  {r['fpr']:g}: {r['tpr_upper']:.5g} [{r['tpr_lower']:.5g}]  | "
                  f"{min(1.0, math.exp(eps) * r['fpr'] + 1e-5):.4g} | {clt[i]:.5g}")
        mid = summ["gdp_mu_range"]
        print(" " * 34 + f"  advantage <= {summ['advantage']['upper']:.4g}; mu on "
              f"[1e-6, 1-1e-6] in [{mid['lower']:.4g}, {mid['upper']:.4g}]; "
              f"mu_CLT {mu_clt:.4g}")


if __name__ == "__main__":
    main()
