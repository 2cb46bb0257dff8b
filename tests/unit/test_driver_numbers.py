"""drivers/common/numbers.py: the number-token check and the complete lines the ddsperf and Perftest parsers share."""
from __future__ import annotations

import pytest

from edgebench.drivers.common.numbers import checked_number, complete_lines


class Bad(ValueError):
    pass


def check(tok, **kw):
    return checked_number(tok, what="latency (us)", where="line 3", bounds=(0, 1e6), error=Bad, **kw)


@pytest.mark.parametrize("tok, expected", [("12", 12.0), ("1.5e2", 150.0), (".5", 0.5), ("+3.", 3.0), (7, 7.0),
                                           (2.25, 2.25)])
def test_numbers_within_bounds_pass(tok, expected):
    assert check(tok) == expected


@pytest.mark.parametrize("tok, message", [
    ("12us", "line 3: latency (us) is '12us', not a number"),
    ("", "line 3: latency (us) is '', not a number"),
    ("nan", "line 3: latency (us) is NaN"),
    ("-inf", "line 3: latency (us) is infinite"),
    ("-1", "line 3: latency (us) is negative (-1)"),
    ("2e6", "line 3: latency (us) 2e+06 is outside 0..1e+06"),
    (10 ** 400, "line 3: latency (us) is too large"),
])
def test_what_a_tool_cannot_have_printed_is_refused_naming_where(tok, message):
    with pytest.raises(Bad) as exc:
        check(tok)
    assert str(exc.value) == message


def test_whole_scale_and_nan_as_none():
    assert check("3", whole=True) == 3.0
    with pytest.raises(Bad, match="is 3.5, not a whole number"):
        check("3.5", whole=True)
    assert check("0.002", scale=1000) == 2.0
    with pytest.raises(Bad, match="outside"):
        check("2000", scale=1000)  # the bounds apply after scaling
    assert check("-nan", nan_is_none=True) is None


def test_complete_lines_drop_a_cut_off_last_line():
    assert complete_lines("a\r\nb\nc") == [(1, "a"), (2, "b")]
    assert complete_lines("a\n") == [(1, "a")]
    assert complete_lines("") == []
