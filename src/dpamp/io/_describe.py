"""How a plan's stage is described to people: one line each for the mechanism (with its
sensitivity), the sampling (sampler, rate or batches), the steps (and epochs) and the
neighbouring relation, as every command's "assumed" line and the reports print them."""
from __future__ import annotations

from ..core.relations import Relation


def _g(x) -> str:
    from ..core.rounding import fmt
    return fmt(x) if isinstance(x, float) else str(x)


def _keys(kind: str) -> tuple[str, ...]:
    from ..mechanisms.family import families
    return next((f.keys for _, f in families() if f.word == kind), ())


def user_words(a: dict) -> str:
    """What a user-level stage assumed: the unit, m, what is sampled and what is clipped."""
    m = a["records_per_user"]
    sampled = "users sampled" if a["user_sampling"] else (
        "records sampled" if a.get("sampler", "none") != "none" else "no sampling")
    clip = "each user's sum clipped" if a["user_clipping"] else "per-record clipping"
    return (f"user-level: add/remove one user of at most {m} record{'s' if m != 1 else ''} "
            f"({sampled}, {clip}; a user moves the sum by at most "
            f"{_g(a['user_sensitivity'])})")


def describe_stage(p: dict, a: dict, steps: int, relation: Relation) -> dict:
    kind = p["mechanism"]
    if kind in ("gaussian", "laplace"):
        name = "Gaussian" if kind == "gaussian" else "Laplace"
        norm = "L2" if kind == "gaussian" else "L1"
        sens = a.get("sensitivity", p.get("sensitivity", 1.0))
        if "noise_multiplier" in p:
            mech = f"{name}, noise multiplier {_g(p['noise_multiplier'])}"
        else:
            key = "sigma" if kind == "gaussian" else "scale"
            mech = f"{name}, {'σ' if kind == 'gaussian' else 'scale'} {_g(p[key])}"
        mech += f", {norm} sensitivity {_g(float(sens))}"
    elif kind == "randomized_response":
        mech = ("randomized response, " +
                (f"p = {_g(p['p'])}" if "p" in p else f"ε = {_g(p['epsilon'])}"))
    elif kind == "kary_randomized_response":
        mech = (f"k-ary randomized response, k = {_g(p['k'])}, " +
                (f"noise parameter {_g(p['noise_parameter'])}" if "noise_parameter" in p
                 else f"ε = {_g(p['epsilon'])}"))
    elif kind == "pure_dp":
        mech = f"ε-DP mechanism, ε = {_g(p['epsilon'])}"
    elif kind == "zcdp":
        mech = f"ρ-zCDP mechanism, ρ = {_g(p['rho'])}"
    elif kind == "matrix":
        tag = "exact" if a.get("sensitivity_exact") else "upper bound"
        mech = (f"matrix mechanism, {a['strategy']}, noise multiplier "
                f"{_g(a['noise_multiplier'])}, L2 sensitivity {a['sensitivity']:.6g} ({tag}, "
                f"{a['sensitivity_route']}); {_routes(a)}")
    elif kind == "eps_delta":
        mech = f"(ε, δ)-DP mechanism, ε = {_g(p['epsilon'])}, δ = {_g(p['delta'])}"
    else:  # a family's own word: its name and the keys given
        mech = ", ".join([kind.replace("_", " ")] + [
            f"{k} = {_g(a.get(k, p.get(k)))}" for k in _keys(kind) if k in p or k in a])
    if a.get("unit") == "user":
        mech += "; " + user_words(a)
    sampler = a.get("sampler", "none")
    if kind == "matrix":
        samp = a["participation"]
    elif sampler == "none":
        samp = "none (full dataset)"
    elif "batch_size" in a:
        b, n = a["batch_size"], a["dataset_size"]
        samp = (f"{sampler}, rate {b}/{n} ≈ {b / n:.6g}" if sampler == "poisson" else
                f"{sampler}, rate {b}/{n} ≈ {b / n:.6g}, batches cut to at most "
                f"{a['max_batch_size']} records ({n}: the larger dataset of a neighbouring "
                f"pair, as in dp-accounting)" if sampler == "truncated-poisson" else
                f"{sampler}, one of {a['steps_per_epoch']} batches per epoch ({n} records, "
                f"expected batch {n / a['steps_per_epoch']:.6g})" if sampler == "allocation" else
                f"{sampler}, {a['steps_per_epoch']} batches of {b} of {n} per epoch"
                if sampler == "shuffle" else f"{sampler}, {b} of {n}")
    else:
        samp = f"{sampler}, rate {_g(a['sample_rate'])}"
    count = f"{steps} step{'s' if steps != 1 else ''}"
    if "epochs" in p:
        count += f" ({_g(p['epochs'])} epoch{'s' if p['epochs'] != 1 else ''})"
    rs = a.get("repeat_and_select")
    if rs:
        dist = rs["distribution"].replace("_", " ") + (
            f", shape {_g(rs['shape'])}" if "shape" in rs else "")
        count += (f" per run; runs repeated a random number of times ({dist}, mean "
                  f"{_g(rs['mean'])}), the best kept")
    return {"mechanism": mech, "sampling": samp, "steps": count,
            "relation": relation.words}


def _routes(a: dict) -> str:
    """A matrix mechanism's routes in words: the one it takes, or those its answer compares."""
    detail = f" ({a['route_detail']})" if a.get("route_detail") else ""
    routes = a.get("routes") or [a["route"]]
    if len(routes) == 1:
        return f"route {routes[0]}{detail}"
    rest = ", ".join(routes[1:])
    return (f"routes {routes[0]}{detail}, {rest}, the smallest taken (the answer's method "
            f"names the route that gave it)")
