"""Rule `background`: a signal that moved in most services at once is background."""

from __future__ import annotations

from collections.abc import Mapping


def keep_what_stands_out(parts: Mapping[str, dict[str, float]], quantile: float, population: int) -> None:
    """Lower each component (in place) to how far a service stands above the others.

    A signal that moved in most services at once (a workload change, a noisy exporter) is
    background; what matters is the service where it moved more than elsewhere. Components are
    deviations (rca.fault_model.depth), so standing above is a difference: a service's less the
    level most services reach (`quantile`). Services not observed (or quiet) count as zeros
    among the `population`.
    """
    names = {p for comps in parts.values() for p in comps}
    for name in names:
        observed = [comps.get(name, 0.0) for comps in parts.values()]
        values = sorted([0.0] * max(0, population - len(observed)) + observed)
        background = values[int(quantile * (len(values) - 1))] if values else 0.0
        for comps in parts.values():
            v = comps.get(name, 0.0)
            comps[name] = max(0.0, v - background) if v else 0.0
