import json
import stat
from pathlib import Path

from storage.investigations import Store

TRACE = {
    "decision_report": {"ranking": [{"service": "db", "fault_type": "cpu", "confidence": 0.7, "hypothesis": "h-1"}]},
    "evidence_package": {"missing": ["no traces"]},
}
AUDIT = {"score": 0.91, "route": "accept", "blamed_stage": None}


def test_a_new_sqlite_file_is_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    Store(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_lifecycle_survives_reopening(record: str) -> None:
    path = record
    store = Store(path)
    store.start(id="inv-1", service="api", window=(0.0, 60.0), channel="C1", user="U1", engine="lats")
    store.set_thread("inv-1", parent_ts="1.1", thread_ts="1.1")
    store.finish("inv-1", trace=TRACE, audit=AUDIT)
    store.add_feedback("inv-1", user="U2", correct=False, true_cause="cache", note="it was the cache")
    store.add_question("inv-1", user="U2", question="why db?", answer="because")
    store.start(id="inv-2", service="api", window=(60.0, 120.0), channel="C1", user="U1", engine="lats")
    store.close()

    again = Store(path)  # a restart: what was running is marked interrupted, nothing else changes
    done = again.investigation("inv-1")
    assert done is not None and done.status == "done" and done.top_service == "db" and done.confidence == 0.7
    assert done.trace == TRACE and done.missing == ("no traces",) and done.score == 0.91
    assert again.by_thread("C1", "1.1") == done
    interrupted = again.investigation("inv-2")
    assert interrupted is not None and interrupted.status == "interrupted" and "stopped" in interrupted.error
    assert [f.true_cause for f in again.feedback("inv-1")] == ["cache"]
    assert again.questions("inv-1") == [("why db?", "because")]
    assert [r.id for r in again.between(0, 1e12)] == ["inv-1", "inv-2"]
    again.close()


def test_a_delivery_is_taken_once(record: str) -> None:
    store = Store(record)
    assert store.first_delivery("Ev123")
    assert not store.first_delivery("Ev123")
    assert store.first_delivery("Ev124")
    store.close()


def test_similar_finds_earlier_same_verdicts(record: str) -> None:
    store = Store(record)
    for i in range(3):
        store.start(id=f"inv-{i}", service="api", window=(0.0, 60.0), channel="C1", user="U1", engine="lats")
        store.finish(f"inv-{i}", trace=TRACE, audit=AUDIT)
    last = store.investigation("inv-2")
    assert last is not None
    similar = store.similar(channel="C1", top_service="db", top_fault="cpu", before=last.created + 1)
    assert {r.id for r in similar} == {"inv-0", "inv-1", "inv-2"}
    assert store.similar(channel="C1", top_service="db", top_fault="memory", before=1e12) == []
    store.add_repair(
        "inv-0",
        before=0.5,
        after=0.9,
        decisive="analysis_structure",
        steps=[{"stage": "analysis_structure", "patch": "prune", "committed": True}],
        trace=TRACE,
        audit=AUDIT,
        top_before="db",
        top_after="db",
    )
    (repair,) = store.repairs("inv-0")
    assert repair.steps[0]["patch"] == "prune" and repair.after == 0.9
    assert json.dumps(repair.trace) == json.dumps(TRACE)
    store.close()


def test_a_channel_sees_only_its_own_investigations(record: str) -> None:
    """A private channel's investigation is never shown in another channel: not in its list of
    the day, not as "seen before" with the same verdict."""
    store = Store(record)
    store.start(id="private", service="api", window=(0.0, 60.0), channel="G0PRIVATE", user="U1", engine="lats")
    store.finish("private", trace=TRACE, audit=AUDIT)
    store.start(id="public", service="api", window=(0.0, 60.0), channel="C0PUBLIC", user="U2", engine="lats")
    store.finish("public", trace=TRACE, audit=AUDIT)
    assert [r.id for r in store.between(0, 1e12, channel="C0PUBLIC")] == ["public"]
    assert [r.id for r in store.between(0, 1e12, channel="G0PRIVATE")] == ["private"]
    assert store.similar(channel="C0PUBLIC", top_service="db", top_fault="cpu", before=1e12)[0].id == "public"
    assert {r.id for r in store.similar(channel="C0PUBLIC", top_service="db", top_fault="cpu", before=1e12)} == {
        "public"
    }
    store.close()


def test_a_replica_with_a_job_queue_leaves_running_investigations_to_the_workers(record: str) -> None:
    first = Store(record)
    first.start(id="inv-w", service="api", window=(0.0, 60.0), channel="C1", user="U1", engine="lats")
    replica = Store(record, recover=False)  # another replica starts while a worker runs inv-w
    row = replica.investigation("inv-w")
    assert row is not None and row.status == "running" and replica.recovered == ()
    first.close()
    replica.close()


def test_trusts_are_the_last_verdicts_before_a_time_in_any_channel(record: str) -> None:
    store = Store(record)
    for i, (channel, trust) in enumerate([("C1", 0.2), ("C2", 0.5), ("C1", 0.9)]):
        store.start(id=f"t-{i}", service="api", window=(0.0, 60.0), channel=channel, user="U1", engine="lats")
        store.finish(f"t-{i}", trace=TRACE, audit={**AUDIT, "trust": trust})
    store.start(id="old-audit", service="api", window=(0.0, 60.0), channel="C1", user="U1", engine="lats")
    store.finish("old-audit", trace=TRACE, audit=AUDIT)  # written before trust was recorded: skipped
    store.start(id="running", service="api", window=(0.0, 60.0), channel="C1", user="U1", engine="lats")
    last = store.investigation("t-2")
    assert last is not None
    assert sorted(store.trusts(before=1e12)) == [0.2, 0.5, 0.9]
    assert sorted(store.trusts(before=last.created)) == [0.2, 0.5]  # only what came before
    assert len(store.trusts(before=1e12, limit=2)) == 2
    store.close()


def test_marks_are_the_marked_verdicts_before_a_time_with_their_latest_mark(record: str) -> None:
    store = Store(record)
    feats = [{"confidence": 0.4, "margin": 0.5, "modalities": 3}, {"confidence": 0.2, "margin": 0.1, "modalities": 1}]
    for i, f in enumerate(feats):
        store.start(id=f"m-{i}", service="api", window=(0.0, 60.0), channel=f"C{i}", user="U1", engine="lats")
        store.finish(f"m-{i}", trace=TRACE, audit=AUDIT, calibration=f)
    store.start(id="unmarked", service="api", window=(0.0, 60.0), channel="C1", user="U1", engine="lats")
    store.finish("unmarked", trace=TRACE, audit=AUDIT, calibration=feats[0])
    store.start(id="old", service="api", window=(0.0, 60.0), channel="C1", user="U1", engine="lats")
    store.finish("old", trace=TRACE, audit=AUDIT)  # finished before features were kept: no mark to learn from
    store.add_feedback("m-0", user="U1", correct=False)
    store.add_feedback("m-0", user="U2", correct=True)  # the latest mark counts
    store.add_feedback("m-1", user="U1", correct=False)
    store.add_feedback("old", user="U1", correct=True)
    marks = store.marks(before=1e12)
    assert sorted((m["confidence"], right) for m, right in marks) == [(0.2, False), (0.4, True)]
    second = store.investigation("m-1")
    assert second is not None
    assert [m["confidence"] for m, _ in store.marks(before=second.created)] == [0.4]  # only what came before
    assert len(store.marks(before=1e12, limit=1)) == 1
    store.close()
