"""The default counter's calibration pinned on three messages: what one observation teaches.

:class:`~windowkeeper.CalibratedEstimator` estimates from characters until the provider reports
a request's size; then the observed request is estimated at exactly its report, a request that
extends it at the report plus the estimate of what was added, and any other request at its own
estimate plus what the report left unexplained (system prompt, tools, framing).
"""

from __future__ import annotations

import pytest

from windowkeeper import CalibratedEstimator

A = {"role": "user", "content": "a" * 4_000}
B = {"role": "assistant", "content": "b" * 40}
C = {"role": "user", "content": "c" * 2_000}


def test_before_any_report_the_estimate_is_from_characters() -> None:
    counter = CalibratedEstimator()
    assert (counter.count([A, B]), counter.count([A]), counter.count([C])) == (1_491, 1_472, 738)


@pytest.mark.parametrize(
    ("reported", "estimates"),
    [
        (1_500, (1_500, 2_238, 883, 902, 1_617)),
        (3_000, (3_000, 3_738, 2_383, 2_402, 3_117)),
    ],
)
def test_one_report_calibrates_every_later_estimate(
    reported: int, estimates: tuple[int, ...]
) -> None:
    """In order: the observed request (its report), it extended by C (the report plus C's own
    estimate), C alone and C before B (their estimate plus what the report left unexplained),
    and A alone."""
    counter = CalibratedEstimator()
    counter.observe([A, B], reported_input_tokens=reported)
    requests = ([A, B], [A, B, C], [C], [C, B], [A])
    assert tuple(counter.count(request) for request in requests) == estimates
