"""Rule `changes`: the latest change (a deploy, a config push, a flag, a scaling, a rollback,
a restart) right after which its service's own anomaly began and lasted while the change stood,
before any other service's, is the first suspect and its fault the change, unless a neighbour
whose anomaly began with it explains that anomaly; a change with no anomaly right after it
explains nothing.

A change is a fact with a time, not a deviation: it cannot outweigh the telemetry by size,
only order it. So the rule asks only the order of events: the change, then the changed
service's anomaly beginning at once (by its next sample: the series' own step, with the clock
skew and sampling forgiven between a cause and its effect, rca.topology.ONSET_TOLERANCE), and
no other service's anomaly beginning between the two. A change long before its service's
anomaly had time to show and did not; one after which another service went first only
coincided, and so did one to a service a neighbour failing from the same moment explains (a
neighbour anomalous since well before the change, the service unharmed until it, does not).
A change made after the symptom was already degraded (its degradation's onset, rule `timing`,
with the skew forgiven) began nothing of the incident asked about: a cause comes before its
effect, and a busy team's pipeline deploys during incidents too. Where several changes broke
something, the latest is the incident asked about: on-call asks
about what is going on now, and a symptom degraded since an earlier incident shows no new
onset of its own for the next one, so the symptom's first onset cannot order them.

What began right after a change counts only where it is harm of this incident: an anomaly of
the incident asked about (rule `timing`: one over before the symptom's began is another's), a
metric that moved the bad way, and, after a change that starts a new process (a deploy, a
rollback, a restart), not the process's own series, which a restart moves by itself (a fresh
process's first garbage collections, its descriptors, memory and CPU starting afresh): what the
new version breaks shows in its work, its answers, latency, errors and logs. For the same reason
those process series, where they shifted right as their service restarted, are no evidence
against it at all (`moved_by_restart`): a fresh process is measured against the old one's
normal, and a harmless deploy would otherwise stand as a memory or CPU fault for as long as the
look-back holds the old process.

Harm that follows a change lasts while the change stands: a version's defect, a pushed value,
goes on for as long as the service runs it. Harm that ended while the changed service still ran
it, with no later change (a rollback, the next version) to end it, was not the change's doing:
the roll's own blip as one process hands over to the next, or a stall that passed by itself.

Waits (`WAITS`, its own ablation switch): the calls the changed service makes, as it timed and
counted them (a client-side series), show its callees' answers; where a callee it calls was
harmed from the same moment (within the skew forgiven), the wait is that callee's harm, not the
change's, whether or not a victim rule found the callee strong enough to explain the service.
A change that broke how the service calls (a timeout pushed too low) still shows there, with
the callees unharmed.
Two incidents in a row (`UNDONE`, its own ablation switch): a change made once an earlier
change's harm was under way began nothing, unless all that harm had ended, the earlier change
undone: that incident is over, and the next change may begin the next, however long the
symptom has been degraded through both."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import networkx as nx

from rca.changes import Change, ChangeKind
from rca.evidence import Evidence, EvidenceId
from rca.profiles import profile_step
from rca.rules.board import Board
from rca.rules.timing import degraded
from rca.signals import is_client_side
from rca.topology import ONSET_TOLERANCE

UNDONE = "undone"  # the ablation switch of an earlier change's ended harm freeing the next change to begin an incident
WAITS = "waits"  # the ablation switch of a changed service's wait on a callee harmed from the same moment read as that callee's
RESTARTS = frozenset({ChangeKind.DEPLOY, ChangeKind.ROLLBACK, ChangeKind.RESTART})  # changes that start a new process


def breaking_change(
    evidence: Sequence[Evidence],
    changes: Iterable[Change],
    current: frozenset[EvidenceId],
    began: float | None = None,
    *,
    undone: bool = True,
    waits: nx.DiGraph | None = None,
) -> tuple[str, Change] | None:
    """The latest change right after which harm to its service began, no other service's
    harm beginning between the two, made before the symptom was degraded: the service and the
    change. `current`: the evidence of the incident asked about (rule `timing`); `began`: when
    the symptom's degradation began, where it is known. A change made once the harm of an
    earlier one was under way began nothing either, unless (`undone`, its own ablation switch)
    all that harm ended, the change undone: that incident is over, and the next may begin.
    `waits` (`WAITS`, its own ablation switch): the call graph, where a wait on calls to a callee
    harmed from the same moment is that callee's harm, not the change's."""
    placed = placed_harm(evidence, current)
    found: tuple[str, Change] | None = None
    under_way = began  # since when the incident was under way: the symptom's, then each breaking change's harm
    for c in sorted(changes, key=lambda c: c.time):
        if under_way is not None and c.time > under_way + ONSET_TOLERANCE:
            continue
        after = harm_after(c, placed, changes)
        if waits is not None and c.service in waits:
            callees = set(waits.successors(c.service))
            after = [ev for ev in after if not waited(ev, placed, callees)]
        if not after:
            continue
        harmed = min(ev.onset for ev in after if ev.onset is not None)
        # `lasted` keeps harm still going or ended by a later change to the service: all of it ended, the change was undone
        under_way = None if undone and all(ev.until is not None for ev in after) else harmed
        if not any(
            ev.entity != c.service
            and ev.onset is not None
            and c.time - ONSET_TOLERANCE <= ev.onset < harmed - ONSET_TOLERANCE
            for ev in placed
        ):
            found = (c.service, c)
    return found


def placed_harm(evidence: Sequence[Evidence], current: frozenset[EvidenceId]) -> list[Evidence]:
    """The harm of the incident asked about that time can place: this incident's evidence
    (rule `timing`) with an onset inside the data, that moved its series the bad way."""
    return [ev for ev in evidence if ev.id in current and ev.onset is not None and not ev.under_way and degraded(ev)]


def harm_after(c: Change, placed: Sequence[Evidence], changes: Iterable[Change]) -> list[Evidence]:
    """The harm to the changed service that began right after the change and lasted while it
    stood; after a change that starts a new process, not the process's own series."""
    return [
        ev
        for ev in placed
        if ev.entity == c.service
        and (c.kind not in RESTARTS or not ev.of_process)  # a restart moves those by itself
        and right_after(c, ev)
        and lasted(c, ev, changes)
    ]


def waited(ev: Evidence, placed: Sequence[Evidence], callees: set[str]) -> bool:
    """The evidence is a wait on calls (a client-side series: their latency, their failures)
    whose callee was harmed from the same moment, within the skew forgiven between a cause and
    its effect: that callee's answers, which a change to the caller does not explain."""
    return (
        ev.onset is not None
        and is_client_side(ev.subject)
        and any(
            o.entity in callees and o.onset is not None and abs(o.onset - ev.onset) <= ONSET_TOLERANCE for o in placed
        )
    )


def right_after(c: Change, ev: Evidence) -> bool:
    """The evidence began right after the change: by its series' next sample, with the clock
    skew and sampling between a cause and its effect forgiven."""
    return (
        ev.onset is not None and c.time - ONSET_TOLERANCE <= ev.onset <= c.time + profile_step([ev]) + ONSET_TOLERANCE
    )


def lasted(c: Change, ev: Evidence, changes: Iterable[Change]) -> bool:
    """The harm went on as long as the change stood: it still goes on, or it ended only once a
    later change to the service (a rollback, the next version) replaced it. A version's defect
    lasts while it runs, so harm over while the changed service still ran it (the roll's own
    blip as one process hands over to the next, a passing stall) was not the change's doing."""
    if ev.until is None:
        return True
    step = profile_step([ev])
    return any(x.service == c.service and c.time < x.time <= ev.until + step + ONSET_TOLERANCE for x in changes)


def moved_by_restart(evidence: Iterable[Evidence], changes: Iterable[Change]) -> frozenset[EvidenceId]:
    """The process series (CPU, memory and GC, disk, descriptors) that shifted right as their
    service started a new process: a fresh process set against the old one's normal, not a
    fault of either."""
    restarts = [c for c in changes if c.kind in RESTARTS]
    return frozenset(
        ev.id
        for ev in evidence
        if ev.of_process and any(c.service == ev.entity and right_after(c, ev) for c in restarts)
    )


def lift_changed(
    values: dict[str, tuple[float, str]],
    board: Board,
    explained: Mapping[str, float | None],
    *,
    undone: bool = True,
    waits: bool = True,
) -> tuple[dict[str, tuple[float, str]], frozenset[str]]:
    """The service of the breaking change placed first (its value raised to just above the
    best), unless a neighbour whose anomaly began with the change explains it (`explained`:
    per service the victims rules explained, when its explaining neighbour's anomaly began);
    returns the values and the services whose fault is the change."""
    found = breaking_change(
        board.evidence, board.changes, board.current, board.began, undone=undone, waits=board.graph if waits else None
    )
    if found is None or found[0] not in values:
        return values, frozenset()
    if found[0] in explained and ((began := explained[found[0]]) is None or began >= found[1].time - ONSET_TOLERANCE):
        return values, frozenset()
    top, change = found
    value = values[top][0]
    best = max(v for v, _ in values.values())
    out = dict(values)
    out[top] = (
        value if value >= best else min(1.0, best + 1e-3),
        f"its anomaly began right after it changed ({change.describe()}), before any other service's",
    )
    return out, frozenset({top})
