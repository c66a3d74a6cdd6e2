"""Finding labelled incidents under any path, by the layout of the files."""

from __future__ import annotations

from pathlib import Path

from rca.errors import LayoutNotFound
from rca.model import BrokenCase, Incident, IncidentCase
from rca.sources.nezha import is_nezha_root, load_nezha
from rca.sources.petshop import is_petshop_scenario, load_petshop
from rca.sources.snapshot import MANIFEST, is_snapshot, load_snapshot

_MAX_DEPTH = 4


def find_cases(path: Path | str, *, broken: list[BrokenCase] | None = None) -> list[IncidentCase]:
    """Every labelled case under path, from every layout found there. With `broken`, a case
    whose files cannot be read is put there instead of stopping the search."""
    root = Path(path)
    if not root.exists():
        raise LayoutNotFound(root)
    cases: list[IncidentCase] = []
    _walk(root.resolve(), 0, cases, broken)
    if not cases and not broken:
        raise LayoutNotFound(root)
    return cases


def find_recordings(path: Path | str) -> list[Incident]:
    """Every recorded incident under path: rcabot snapshots, and the labelled cases (unlabelled)."""
    root = Path(path)
    if is_snapshot(root):
        return [load_snapshot(root)]
    snapshots = [load_snapshot(p.parent) for p in sorted(root.glob(f"*/{MANIFEST}"))] if root.is_dir() else []
    try:
        return snapshots + [c.incident for c in find_cases(root)]
    except LayoutNotFound:
        if snapshots:
            return snapshots
        raise


def _walk(folder: Path, depth: int, out: list[IncidentCase], broken: list[BrokenCase] | None) -> None:
    if is_nezha_root(folder):
        out.extend(load_nezha(folder, broken=broken))
        return
    if is_petshop_scenario(folder):
        out.extend(load_petshop(folder, broken=broken))
        return
    children = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    scenarios = [c for c in children if is_petshop_scenario(c)]
    if scenarios:
        out.extend(load_petshop(folder, broken=broken))
        children = [c for c in children if c not in scenarios]
    if depth >= _MAX_DEPTH:
        return
    for child in children:
        _walk(child, depth + 1, out, broken)
