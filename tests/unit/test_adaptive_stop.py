"""The early stop's guard (sweep/adaptive.py, STOP_MIN_DF): after 2 rounds a comparison judged alone has a spread of
1 degree of freedom and may not stop on it, however clear it looks; pooled with other modes sharing the host's runs
(verdict.pooled) the same comparison has more and stops. make sweep runs from min-repetitions 2 on this."""
from edgebench.results.report.verdict import compare, pooled
from edgebench.sweep import adaptive


def _paired(a, b):
    return compare(a, b, higher_is_better=True, rounds_a=list(range(len(a))), rounds_b=list(range(len(b))))


def test_two_rounds_alone_do_not_stop_even_when_far_apart():
    c = _paired([600.0, 601.0], [1000.0, 1000.5])  # 40 % worse, a spread of almost nothing: 1 degree of freedom
    assert c.verdict == "worse" and c.df == 1
    assert not adaptive.settled(c, 6)
    # the third round gives the spread a second degree of freedom: the same clear difference stops
    assert adaptive.settled(_paired([600.0, 601.0, 599.5], [1000.0, 1000.5, 999.0]), 6)


def test_two_rounds_pooled_with_other_modes_stop():
    host = [1000.0, 1010.0]
    comps = pooled([_paired([600.0, 612.0], host), _paired([900.0, 905.0], host), _paired([700.0, 709.0], host)])
    assert all(c.method == "pooled" and c.df >= adaptive.STOP_MIN_DF for c in comps)
    assert adaptive.settled(comps[0], 6)


def test_an_equivalent_alone_after_two_rounds_waits_too():
    c = _paired([1000.0, 1000.2], [1000.1, 1000.3])
    assert c.verdict == "equivalent"
    assert not adaptive.settled(c, 6)
