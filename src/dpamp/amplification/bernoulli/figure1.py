"""Figure 1 of Imola & Chaudhuri 2021 (and Figs. 2-3): Post_{alpha,k}(epsilon), the lower bound
(eqs. 5/7), the asymptote d k r_alpha(c) (eqs. 2/6) and the post-processing bound, against epsilon.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...core import validate as V
from ._renyi import _check_params
from .bounds import asymptote, lower_bound
from .exact_value import exact

__all__ = ["figure1_data", "Figure1Data", "plot_figure1"]


class Figure1Data(NamedTuple):
    """The curves of Imola & Chaudhuri 2021, Figure 1 (and Figs. 2-3) against epsilon: ``post``
    (exact Post, the proven value of ``exact``; None when not computed), ``post_upper`` (its
    certified upper bound), ``lower`` (eqs. 5/7), ``asymptote`` (d k r_alpha(c), eqs. 2/6) and
    ``post_processing`` (epsilon itself)."""

    epsilon: np.ndarray
    post: np.ndarray | None
    post_upper: np.ndarray | None
    lower: np.ndarray
    asymptote: np.ndarray
    post_processing: np.ndarray
    c: float
    d: int
    k: int
    alpha: float


def figure1_data(c=0.1, d=1, alpha=50.0, k=1, epsilon=None, *, with_exact=None):
    """Data of Imola & Chaudhuri 2021, Figure 1: Post_{alpha,k}(epsilon), the lower bound (5)/(7),
    the asymptote d k r_alpha(c) (2)/(6) and the post-processing bound epsilon, on an epsilon grid
    (default 100 points on (0, 10]). ``with_exact``: compute Post (default: only for d = 1,
    where it is certified; the paper also omits it for larger d)."""
    c, d, k = _check_params(c, d, k)
    a = float(V.orders(alpha))
    eps = np.linspace(0.1, 10.0, 100) if epsilon is None else V.reals("epsilon", epsilon, low=0)
    eps = np.asarray(eps, dtype=float)
    if with_exact is None:
        with_exact = d == 1
    post = post_upper = None
    if with_exact:
        res = exact(eps, a, c, d, k)
        post, post_upper = np.asarray(res.value, float), np.asarray(res.upper, float)
    lower = np.asarray(lower_bound(eps, a, c, d, k), float)
    asym = np.full(eps.shape, asymptote(a, c, d, k))
    return Figure1Data(eps, post, post_upper, lower, asym, eps.copy(), c, d, k, a)


def plot_figure1(path_or_ax=None, c=0.1, d=1, alpha=50.0, k=1, epsilon=None, *,
                 with_exact=None):
    """Draw Imola & Chaudhuri 2021, Figure 1 (Post, lower bound, asymptote and post-processing bound
    against epsilon). ``path_or_ax``: a matplotlib Axes to draw on, a file path to save a
    PNG/PDF/SVG to, or None for a new figure. Returns the Axes. Needs matplotlib (extra
    ``plot``)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("plot_figure1 needs matplotlib: pip install 'dpamp[plot]'") from err
    data = figure1_data(c, d, alpha, k, epsilon, with_exact=with_exact)
    save_to = None
    fig: Figure | None = None            # the new figure (a path or None given)
    if path_or_ax is None or isinstance(path_or_ax, (str, bytes)) or hasattr(path_or_ax,
                                                                              "__fspath__"):
        save_to = path_or_ax
        fig = Figure(figsize=(5.0, 3.6))
        ax = fig.subplots()
    else:
        ax = path_or_ax
    e = data.epsilon
    if data.post is not None:
        ax.plot(e, data.post, color="C0", lw=2, label=r"Post$_{\alpha,k}(\varepsilon)$")
    ax.plot(e, data.lower, color="C1", ls="--", label="lower bound (LB)")
    ax.plot(e, data.post_processing, color="C2", ls=":", label="post-processing (PPI)")
    ax.plot(e, data.asymptote, color="C3", ls="-.", label=r"asymptote $dk\,r_\alpha(c)$")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel("Rényi DP of the samples")
    ax.set_title(f"c = {data.c:g}, d = {data.d}, k = {data.k}, α = {data.alpha:g}")
    ax.set_ylim(0, max(float(e.max()), float(data.asymptote[0])) * 1.05
                if np.isfinite(data.asymptote[0]) else float(e.max()) * 1.05)
    ax.legend(fontsize="small")
    if save_to is not None and fig is not None:     # (a path given: fig is ax's figure)
        fig.tight_layout()
        fig.savefig(save_to, dpi=120)
    return ax
