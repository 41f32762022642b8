"""The Prometheus text the server's /metrics gives: the latency histogram against its
definition, over any latencies."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from rewardsmith.server._metrics import LATENCY_BUCKETS, Metrics

_BUCKET = re.compile(r'_bucket\{route="(?P<route>[^"]+)",le="(?P<le>[^"]+)"\} (?P<n>\d+)')


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["/v1/score", "/get_reward"]),
            st.one_of(
                st.sampled_from(LATENCY_BUCKETS),  # a latency right on a bound counts in it
                st.floats(min_value=0.0, max_value=120.0, allow_nan=False),
            ),
        ),
        max_size=40,
    )
)
def test_each_bucket_counts_the_requests_at_or_under_its_bound(
    requests: list[tuple[str, float]],
) -> None:
    metrics = Metrics()
    for route, seconds in requests:
        metrics.observe_request(route, 200, seconds)
    rendered = {(m["route"], m["le"]): int(m["n"]) for m in _BUCKET.finditer(metrics.render())}
    expected = {}
    for route in {r for r, _ in requests}:
        mine = [s for r, s in requests if r == route]
        for bound in LATENCY_BUCKETS:
            le = str(int(bound)) if float(bound).is_integer() else repr(bound)
            expected[(route, le)] = sum(s <= bound for s in mine)
        expected[(route, "+Inf")] = len(mine)
    assert rendered == expected
