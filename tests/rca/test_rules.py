"""The scoring rules read directly, apart from the scoring around them."""

from rca.hypotheses import ScoringConfig
from rca.rules.background import keep_what_stands_out


def test_a_signal_in_most_services_is_background_and_in_one_it_is_not() -> None:
    quantile = ScoringConfig().background_quantile
    most = {"a": {"cpu": 0.9}, "b": {"cpu": 0.5}, "c": {"cpu": 0.5}, "d": {"cpu": 0.5}}
    keep_what_stands_out(most, quantile, population=5)  # four of five moved: their common level is background
    assert most["a"]["cpu"] > 0 and all(most[s]["cpu"] == 0 for s in "bcd")
    one = {"a": {"cpu": 0.9}, "b": {"lat": 0.5}}
    keep_what_stands_out(one, quantile, population=5)  # each signal in one service of five: nothing is background
    assert one["a"]["cpu"] == 0.9 and one["b"]["lat"] == 0.5
