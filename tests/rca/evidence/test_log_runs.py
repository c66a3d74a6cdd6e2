"""Where a run of a log template's lines begins and ends: a silence its own rate did not expect
ends it, as a metric's run ends where its series stayed back; a sparse template's pauses do not."""

from __future__ import annotations

from collections import Counter

from rca.evidence.logs import anomalous_run

BINS = range(60)  # ten minutes of 10-second bins, the service writing lines in every one


def _two_incidents(first: int, second: int, gap: range) -> Counter[int]:
    counts: Counter[int] = Counter()
    for b in BINS:
        if b < gap.start:
            counts[b] = first
        elif b >= gap.stop:
            counts[b] = second
    return counts


def test_a_silence_the_rate_did_not_expect_ends_the_run_and_the_one_going_on_is_the_evidence() -> None:
    expected = {b: 0.0 for b in BINS}  # a template never seen in the normal period
    counts = _two_incidents(10, 3, range(30, 40))  # 100 s of silence after 30 lines a bin
    assert anomalous_run(counts, expected, 1) == (40, 59)
    assert anomalous_run(counts, expected, 1, silences=False) == (0, 59)  # the ablation: one run across it


def test_a_pause_within_the_time_forgiven_or_within_a_sparse_rate_ends_nothing() -> None:
    expected = {b: 0.0 for b in BINS}
    short = _two_incidents(10, 3, range(30, 35))  # 50 s: within ONSET_TOLERANCE
    assert anomalous_run(short, expected, 1) == (0, 59)
    sparse = Counter({b: 1 for b in BINS if b % 9 == 0})  # a line every 90 s: a pause of 80 s is its rate
    assert anomalous_run(sparse, expected, 1) == anomalous_run(sparse, expected, 1, silences=False)


def test_where_a_run_ends_does_not_depend_on_the_bins_outside_it() -> None:
    expected = {b: 0.0 for b in BINS}
    counts = _two_incidents(10, 3, range(30, 40))
    shifted = Counter({b + 1000: n for b, n in counts.items()})
    assert anomalous_run(shifted, {b + 1000: 0.0 for b in BINS}, 1) == (1040, 1059)
    over = _two_incidents(10, 0, range(30, 40))  # the lines stopped for good: the run is over
    assert anomalous_run(over, expected, 1) == (0, 29)


def test_a_stretch_with_no_lines_of_the_service_at_all_is_nothing_read_not_a_silence() -> None:
    read = [*range(0, 18), *range(54, 72)]  # three minutes of lines, six unrecorded, three more
    expected = {b: 0.0 for b in read}
    counts = Counter({b: 10 for b in read})
    assert anomalous_run(counts, expected, 1) == (0, 71)  # one run: the template never stopped where it was read
