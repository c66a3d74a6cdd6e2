import pytest

from rca.errors import InputError
from rca.timestamps import from_epoch, parse_timestamp

T = 1674981670.171716  # 2023-01-29 08:41:10.171716 UTC


def test_go_time_string_with_monotonic_suffix() -> None:
    raw = "2023-01-29 08:41:10.171716472 +0000 UTC m=+1.247878332"
    assert parse_timestamp(raw) == pytest.approx(T, abs=1e-6)


def test_iso_with_z_and_nanoseconds() -> None:
    assert parse_timestamp("2023-01-29T08:41:10.171716472Z") == pytest.approx(T, abs=1e-6)


def test_iso_with_offset_is_converted_to_utc() -> None:
    assert parse_timestamp("2023-01-29T16:41:10.171716+08:00") == pytest.approx(T, abs=1e-6)


def test_java_comma_fraction_and_naive_is_utc() -> None:
    assert parse_timestamp("2023-01-29 08:41:10,171716") == pytest.approx(T, abs=1e-6)


@pytest.mark.parametrize("scale", [1, 1e3, 1e6, 1e9])
def test_epoch_in_any_unit(scale: float) -> None:
    assert from_epoch(1674981670 * scale) == pytest.approx(1674981670)
    assert parse_timestamp(str(int(1674981670 * scale))) == pytest.approx(1674981670)


@pytest.mark.parametrize("bad", ["", "yesterday", "2023-13-45T00:00:00Z", "12:00 PM-ish"])
def test_bad_timestamps_raise_input_error(bad: str) -> None:
    with pytest.raises(InputError):
        parse_timestamp(bad)


def test_nan_epoch_is_refused() -> None:
    with pytest.raises(InputError):
        from_epoch(float("nan"))
