"""Operational privacy risk: the trade-off curve (f-DP), the true-positive rate of any
membership-inference attack at a false-positive rate, the dominating Gaussian-DP mu and the
membership advantage, each as a proven bracket (docs/risk.md).

    m = dp.Gaussian(1.1).subsample(dp.Poisson(256 / 60000)) * 14062
    m.tradeoff([1e-3, 1e-2])      # TradeOff: .lower <= beta(alpha) <= .upper
    m.tpr_at_fpr(1e-3)            # RiskBound: the attack's TPR at FPR 1e-3 is <= .upper
    m.gdp_mu()                    # RiskBound: the smallest mu with G_mu <= the trade-off
    m.advantage()                 # RiskBound: max TPR - FPR = delta(0) (Yeom et al. 2018)

beta(alpha) is the smallest type II error of a test at type I error alpha between the outputs
on any pair of neighbours (Dong, Roth & Su, "Gaussian Differential Privacy", JRSS-B 2022,
arXiv:1905.02383, Def. 2.1). ``lower`` holds for every pair and every test (a guarantee);
``upper`` is reached by some pair of neighbours and some test (no analysis can certify more).

Methods (``method=``): "gaussian" (every part a Gaussian: the curve is G_mu exactly, DRS
Thm 2.7 and Cor. 3.3), "profile" (one mechanism with a closed-form privacy profile), "pld"
(the privacy-loss distribution of any composition), "rdp" (any mechanism: the profile from
its (epsilon, delta) upper bounds; no upper bound on beta beyond 1 - alpha); "auto" takes the
first that applies. The curves behind the bounds are computed once per mechanism and kept.
"""
from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict

import numpy as np

from ..core import validate as V
from ..core.rounding import ulps_down, ulps_up
from ..profiles import tradeoff as T

METHODS = ("auto", "gaussian", "profile", "pld", "rdp")
#: the false-positive rates of a summary
DEFAULT_FPR = (1e-3, 1e-2, 1e-1)
#: the range of false-positive rates over which a summary also reports a GDP mu (mu-GDP on
#: all of [0, 1] cannot be certified where the computed profile does not vanish)
MID_RANGE = (1e-6, 1.0 - 1e-6)
_CACHE: "OrderedDict" = OrderedDict()
_CACHE_SIZE = 16


@dataclasses.dataclass(frozen=True)
class TradeOff:
    """The trade-off curve at ``alpha``: lower <= beta(alpha) <= upper (see module docstring)."""

    alpha: np.ndarray | float
    lower: np.ndarray | float
    upper: np.ndarray | float
    method: str
    note: str = ""

    @property
    def tpr(self) -> "RiskBound":
        """The attack's true-positive rate 1 - beta at false-positive rate alpha."""
        return RiskBound(_flip(self.lower, True), _flip(self.upper, False), self.method,
                         self.note)


@dataclasses.dataclass(frozen=True)
class RiskBound:
    """A proven bracket lower <= value <= upper of one risk quantity (arrays where asked)."""

    upper: np.ndarray | float
    lower: np.ndarray | float
    method: str
    note: str = ""

    def __float__(self) -> float:
        return float(self.upper)


def _flip(beta, up: bool):
    """1 - beta rounded up (up) or down; beta in [0, 1]."""
    b = np.asarray(beta, dtype=float)
    v = np.clip(ulps_up(1.0 - b, 1) if up else ulps_down(1.0 - b, 1), 0.0, 1.0)
    return v if np.ndim(v) else float(v)


@dataclasses.dataclass
class _Curves:
    """What the bounds are read from: rows on an eps grid, or the exact GDP mu."""

    method: str
    eps: np.ndarray | None = None
    up: np.ndarray | None = None
    low: np.ndarray | None = None
    mu: tuple | None = None            # (lower, upper) of the exact Gaussian mu
    note: str = ""


def _gaussian_mu(mechanism):
    """(mu rounded down, up) if every part is a Gaussian: its pair is N(mu, 1) vs N(0, 1) and
    the curve is G_mu (DRS Thm 2.7); a composition is G_sqrt(sum c mu^2) (DRS Cor. 3.3)."""
    from ..mechanisms.family import family_of
    parts = mechanism.parts()
    fams = [family_of(m) for m, _ in parts]
    hooks = [f.gaussian_mu for f in fams if f is not None and f.gaussian_mu is not None]
    if not parts or len(hooks) < len(parts):
        return None
    mus = [(c, mu(m)) for (m, c), mu in zip(parts, hooks) if c > 0]
    if not all(math.isfinite(v) for _, v in mus):
        return None
    s = math.fsum(c * v * v for c, v in mus)
    r = math.sqrt(s)
    return float(ulps_down(r, 4)), float(ulps_up(r, 4))


def _profile_grid(mechanism, points):
    from ..profiles import epsilon_for_delta, privacy_profile
    pure = mechanism.pure_epsilon()
    # where the profile comes within 1e-13 of its mass at infinity
    top = epsilon_for_delta(mechanism, min(float(privacy_profile(mechanism, np.inf)) + 1e-13, 1.0))[0]
    top = min(top, pure, 650.0)
    if not (math.isfinite(top) and top > 0):
        top = 50.0
    extra = [pure] if math.isfinite(pure) and pure > top else []
    return np.concatenate([np.linspace(0.0, top, points), extra, [np.inf]])


def _rdp_curves(mechanism, points=60):
    """Upper rows from the mechanism's (epsilon, delta) bounds (method auto), both orders."""
    g = mechanism.epsilon(1e-13)
    pure = mechanism.pure_epsilon()
    top = min(float(g.epsilon), 650.0, pure)
    top = top if math.isfinite(top) and top > 0 else 50.0
    eps = np.linspace(0.0, top, points)
    vals = [min(float(mechanism.delta(e).delta), 1.0) for e in eps]
    if math.isfinite(pure):
        # no loss exceeds the pure epsilon (a proven upper bound): delta is 0 there and at inf
        eps, vals = np.append(eps, [pure, np.inf]), vals + [0.0, 0.0]
    else:
        # the mass at infinity is unknown: 1 is safe (0 if the curve already reached 0)
        eps, vals = np.append(eps, np.inf), vals + [vals[-1] if vals[-1] == 0.0 else 1.0]
    up = np.array([vals, vals])
    return _Curves("rdp", eps, up, None,
                   note="no lower profile: the upper bound on beta is 1 - alpha")


def _compute(mechanism, method, points, budget):
    from ..profiles import has_profile, profile_pair, profile_pair_lower
    from ..profiles.core import single as _single
    if method in ("auto", "gaussian"):
        mu = _gaussian_mu(mechanism)
        if mu is not None:
            return _Curves("gaussian", mu=mu)
        if method == "gaussian":
            raise ValueError("method 'gaussian' needs every part to be a Gaussian mechanism")
    single = _single(mechanism)
    if method in ("auto", "profile") and has_profile(single):
        eps = _profile_grid(single, points)
        # the pure epsilon is a proven upper bound: no privacy loss exceeds it, delta is 0
        up = profile_pair(single, eps)
        pure = single.pure_epsilon()
        if math.isfinite(pure):        # (an infinite one says nothing about eps = inf)
            up = np.where(eps >= pure, 0.0, up)
        return _Curves("profile", eps, up, profile_pair_lower(single, eps))
    if method == "profile":
        raise ValueError(f"method 'profile' needs a mechanism with a closed-form privacy "
                         f"profile (got {type(single).__name__}); use 'pld' or 'rdp'")
    if method in ("auto", "pld"):
        from ..core.errors import OutOfReach
        from ..pld import has_pld
        from ..pld.curves import curves
        if has_pld(mechanism):
            try:
                eps, up, low, h = curves(mechanism, budget=budget, points=points)
                note = "" if low is not None else \
                    "no proven lower PLD for this plan: the upper bound on beta is 1 - alpha"
                return _Curves("pld", eps, up, low, note=note)
            except (OutOfReach, MemoryError) as err:
                if method == "pld":
                    raise
                # a MemoryError's text is the byte count alone: say what it means
                why = err if isinstance(err, OutOfReach) else \
                    f"its grids would need more memory than it may use ({err} bytes)"
                fallback = f"pld: {why}; "
        elif method == "pld":
            raise ValueError("method 'pld' needs a privacy-loss distribution for every part")
        else:
            fallback = ""
        c = _rdp_curves(mechanism)
        c.note = fallback + c.note
        return c
    return _rdp_curves(mechanism)


def curves(mechanism, method: str = "auto", points: int = 2001, budget: float | None = None):
    """The cached bound source of a mechanism (see module docstring)."""
    from ..mechanisms.base import check_mechanism
    check_mechanism(mechanism)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)} (got {method!r})")
    points = V.integer("points", points, low=16, high=200001)
    budget = None if budget is None else V.positive("budget", budget)
    try:
        key = (mechanism, method, points)
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    c = _compute(mechanism, method, points, budget)
    if key is not None:
        _CACHE[key] = c
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return c


def _alphas(alpha, name="alpha"):
    a = V.reals(name, alpha, low=0.0)
    if np.any(a > 1):
        raise ValueError(f"{name} must be in [0, 1] (got {float(np.max(a)):g})")
    return a


def _out(v, shape):
    v = np.asarray(v, dtype=float).reshape(shape)
    return v if v.ndim else float(v)


def tradeoff(mechanism, alpha, method: str = "auto", **options) -> TradeOff:
    """Proven bracket on the trade-off curve beta(alpha), vectorised over alpha in [0, 1]."""
    a = _alphas(alpha)
    c = curves(mechanism, method, **options)
    flat = np.atleast_1d(a).ravel()
    if c.mu is not None:
        lo = T.gaussian_beta(flat, c.mu[1], upper=False)
        up = T.gaussian_beta(flat, c.mu[0], upper=True)
    else:
        lo = T.beta_lower(flat, c.eps, c.up)
        up = (T.beta_upper(flat, c.eps, c.up, c.low) if c.low is not None
              else np.clip(1.0 - flat + 2.0 ** -53, 0.0, 1.0))
    return TradeOff(_out(a, np.shape(a)), _out(lo, np.shape(a)), _out(up, np.shape(a)),
                    c.method, c.note)


def tpr_at_fpr(mechanism, fpr, method: str = "auto", **options) -> RiskBound:
    """Bracket on the largest true-positive rate of any membership-inference attack (any test
    between neighbours) at false-positive rate ``fpr``: 1 - beta(fpr)."""
    _alphas(fpr, "fpr")
    return tradeoff(mechanism, fpr, method, **options).tpr


def advantage(mechanism, method: str = "auto", **options) -> RiskBound:
    """Bracket on the membership advantage max_alpha (1 - alpha - beta(alpha)) = TPR - FPR of
    the best attack (Yeom, Giacomelli, Fredrikson & Jha, "Privacy Risk in Machine Learning",
    CSF 2018, arXiv:1709.01604, Def. 4 and Thm 1), which is the total variation delta(0) of the
    worst pair (the sup over x of (*) at x = 1; DRS Sec. 2.4). For a Gaussian mu it is
    2 Phi(mu / 2) - 1 = erf(mu / (2 sqrt 2))."""
    c = curves(mechanism, method, **options)
    if c.mu is not None:
        from scipy.special import erf
        lo = float(erf(c.mu[0] / (2.0 * math.sqrt(2.0)))) * (1 - 1e-12)
        up = min(float(erf(c.mu[1] / (2.0 * math.sqrt(2.0)))) * (1 + 1e-12), 1.0)
        return RiskBound(up, lo, c.method, c.note)
    i0 = int(np.argmax(c.eps >= 0))             # eps[0] = 0
    up = float(min(c.up[0][i0], c.up[1][i0]))
    lo = 0.0 if c.low is None else float(max(c.low[0][i0], c.low[1][i0]))
    return RiskBound(up, min(lo, up), c.method, c.note)


def gdp_mu(mechanism, fpr_range=(0.0, 1.0), method: str = "auto", **options) -> RiskBound:
    """Bracket on the smallest mu such that the Gaussian trade-off G_mu lies below the
    mechanism's on ``fpr_range`` (the whole [0, 1]: mu-GDP, DRS Def. 2.6). ``upper`` is proven
    (inf where no mu can be certified: see :func:`dpamp.profiles.tradeoff.gdp_mu_upper`);
    ``lower``: no smaller mu is possible (G_mu would rise above the curve's upper bound)."""
    lo_a = V.probability("fpr_range[0]", fpr_range[0])
    hi_a = V.probability("fpr_range[1]", fpr_range[1])
    if not lo_a < hi_a:
        raise ValueError(f"fpr_range must be (low, high) with low < high (got {fpr_range})")
    c = curves(mechanism, method, **options)
    if c.mu is not None:
        return RiskBound(c.mu[1], c.mu[0], c.method, c.note)
    up, at = T.gdp_mu_upper(c.eps, c.up, lo_a, hi_a)
    grid = np.concatenate([[at], _probe_alphas(lo_a, hi_a)])
    low = 0.0
    if c.low is not None:
        low = T.gdp_mu_lower(grid, T.beta_upper(grid, c.eps, c.up, c.low))
    note = c.note
    if not math.isfinite(up):
        note = _join(note, "no Gaussian trade-off lies below the proven curve on this range "
                     "(the bound on beta reaches 0 before alpha = 1, or stays below 1 at "
                     "alpha = 0: mass at infinity, or a privacy profile that does not "
                     "vanish), so try a narrower fpr_range")
    return RiskBound(up, min(low, up), c.method, note)


def _join(*notes) -> str:
    """Notes joined by "; ", each clause once."""
    parts = [p for n in notes if n for p in n.split("; ")]
    return "; ".join(dict.fromkeys(parts))


def _probe_alphas(lo, hi):
    a = np.concatenate([np.geomspace(1e-10, 0.5, 120), 1.0 - np.geomspace(1e-10, 0.5, 120)])
    a = a[(a >= lo) & (a <= hi)]
    return np.concatenate([[lo, hi], a]) if a.size else np.array([lo, hi])


def summary(mechanism, fpr=DEFAULT_FPR, method: str = "auto", **options) -> dict:
    """Everything ``dpamp risk`` prints, as plain Python numbers."""
    f = np.asarray(_alphas(fpr, "fpr"), dtype=float).ravel()
    t = tradeoff(mechanism, f, method, **options)
    tpr = t.tpr
    adv = advantage(mechanism, method, **options)
    mu = gdp_mu(mechanism, method=method, **options)
    mid = mu if math.isfinite(mu.upper) else gdp_mu(mechanism, MID_RANGE, method, **options)
    return {
        "method": t.method,
        "note": t.note,
        "tpr_at_fpr": [{"fpr": float(a), "tpr_upper": float(u), "tpr_lower": float(lo)}
                       for a, u, lo in zip(f, np.atleast_1d(tpr.upper), np.atleast_1d(tpr.lower))],
        "advantage": {"upper": float(adv.upper), "lower": float(adv.lower)},
        "gdp_mu": {"upper": float(mu.upper), "lower": float(mu.lower), "note": mu.note},
        "gdp_mu_range": {"fpr_range": list(MID_RANGE), "upper": float(mid.upper),
                         "lower": float(mid.lower)},
    }
