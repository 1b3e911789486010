"""Support reduction of the d > 1 search (Imola & Chaudhuri 2021, Alg. 3): the symmetry group of the
cube, and one support of corners per orbit with the chain of symmetry conditions within it.

By step (2) of the proof in :mod:`dpamp.amplification.bernoulli._support_search`, a maximising
pair of corner distributions can be taken on at most 4 corners; by step (3), permuting the
coordinates and flipping bits leaves the objective and both constraints unchanged, so one
support per orbit of the hyperoctahedral group is searched, and within it points may be mapped
by the support's stabiliser.
"""
from __future__ import annotations

import functools
import itertools


# --------------------------------------------------------------------------------------------
# symmetry: the hyperoctahedral group on corner indices (bit l of the index, counted from the
# most significant, is coordinate l, as in statistic_channel)
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def cube_group(d: int) -> tuple[tuple[int, ...], ...]:
    """All 2^d d! relabellings of the corners {0,1}^d by a coordinate permutation and a flip."""
    out = set()
    for perm in itertools.permutations(range(d)):
        for flip in range(2 ** d):
            g = []
            for i in range(2 ** d):
                j = 0
                for l in range(d):
                    j = 2 * j + ((i >> (d - 1 - perm[l])) & 1)
                g.append(j ^ flip)
            out.add(tuple(g))
    return tuple(sorted(out))


@functools.lru_cache(maxsize=None)
def support_orbits(d: int, m: int):
    """One m-subset of corners per orbit of :func:`cube_group`, each with its symmetry chain:
    pairs (p, others) of positions in the subset such that WLOG Q_p >= Q_j for j in others.

    Chain: G_0 = the subset's stabiliser; p_0 = 0 and others = its G_0-orbit; G_1 = the
    elements of G_0 fixing p_0, p_1 = the first position G_1 moves, and so on. Any point can
    be mapped by some g_0 in G_0 so that Q_{p_0} is the largest on its orbit, then by some g_1
    in G_1 (which keeps p_0 in place, so the first condition stays true) so that Q_{p_1} is the
    largest on its G_1-orbit, etc.; the objective and constraints do not change (step
    (3))."""
    group = cube_group(d)
    seen, reps = set(), []
    for sub in itertools.combinations(range(2 ** d), m):
        if sub in seen:
            continue
        stab = []
        for g in group:
            image = tuple(sorted(g[i] for i in sub))
            seen.add(image)
            if image == sub:
                stab.append(tuple(sub.index(g[i]) for i in sub))   # as a permutation
        chain = []
        for p in range(m):
            orbit = sorted({perm[p] for perm in stab})
            if len(orbit) > 1:
                chain.append((p, tuple(j for j in orbit if j != p)))
            stab = [perm for perm in stab if perm[p] == p]
            if len(stab) == 1:
                break
        reps.append((sub, tuple(chain)))
    return tuple(reps)
