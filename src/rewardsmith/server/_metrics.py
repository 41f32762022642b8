"""Prometheus metrics in the text exposition format, without a client library.

A handful of counters, two gauges and one histogram are all the server needs; writing the
format (version 0.0.4) directly keeps `prometheus_client` out of the dependencies. Updates
come from the event loop and from worker threads (large requests), so they take a lock.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import accumulate

from ..models import Result

__all__ = ["LATENCY_BUCKETS", "Metrics"]

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds (seconds) of the request latency histogram."""

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The media type Prometheus expects for the text format."""


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return f"{{{inner}}}" if inner else ""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class Metrics:
    """Request counts and latency, scored samples, and status counts per component."""

    def __init__(self, gauges: Mapping[str, tuple[str, Callable[[], float]]] | None = None):
        """`gauges`: name -> (help text, function read at scrape time)."""
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, int]] = Counter()
        self._latency: dict[str, list[int]] = {}
        self._latency_sum: Counter[str] = Counter()
        self._samples: Counter[str] = Counter()
        self._components: Counter[tuple[str, str]] = Counter()
        self._rewards: Counter[str] = Counter()
        self._rejected: Counter[str] = Counter()
        self._gauges = dict(gauges or {})

    def add_gauge(self, name: str, text: str, read: Callable[[], float]) -> None:
        """A gauge whose value `read` gives at scrape time."""
        self._gauges[name] = (text, read)

    def observe_request(self, route: str, code: int, seconds: float) -> None:
        """One finished HTTP request."""
        with self._lock:
            self._requests[route, code] += 1
            # counts per bucket, made cumulative at scrape time (the last one: over 60 s)
            buckets = self._latency.get(route)
            if buckets is None:
                buckets = self._latency[route] = [0] * (len(LATENCY_BUCKETS) + 1)
            buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
            self._latency_sum[route] += seconds

    def observe_samples(self, route: str, results: Sequence[Result]) -> None:
        """Results answered on a route: their count, statuses and component statuses."""
        with self._lock:
            self._samples[route] += len(results)
            for result in results:
                self._rewards[result.status] += 1
                for name, score in result.components.items():
                    self._components[(name, score.status)] += 1

    def reject(self, reason: str) -> None:
        """A request refused before scoring (`queue_full`, `too_large`, `shutting_down`...)."""
        with self._lock:
            self._rejected[reason] += 1

    def render(self) -> str:
        """The exposition text."""
        out: list[str] = []

        def family(name: str, kind: str, text: str) -> None:
            out.append(f"# HELP {name} {text}")
            out.append(f"# TYPE {name} {kind}")

        with self._lock:
            family("rewardsmith_requests_total", "counter", "HTTP requests by route and code.")
            for (route, code), n in sorted(self._requests.items()):
                labels = _labels([("route", route), ("code", str(code))])
                out.append(f"rewardsmith_requests_total{labels} {n}")
            family(
                "rewardsmith_request_duration_seconds",
                "histogram",
                "HTTP request latency, from the first byte read to the response.",
            )
            for route in sorted(self._latency):
                cumulative = accumulate(self._latency[route][:-1])
                for bound, n in zip(LATENCY_BUCKETS, cumulative, strict=True):
                    labels = _labels([("route", route), ("le", _number(bound))])
                    out.append(f"rewardsmith_request_duration_seconds_bucket{labels} {n}")
                labels = _labels([("route", route), ("le", "+Inf")])
                count = sum(self._latency[route])
                out.append(f"rewardsmith_request_duration_seconds_bucket{labels} {count}")
                route_label = _labels([("route", route)])
                out.append(
                    f"rewardsmith_request_duration_seconds_sum{route_label} "
                    f"{_number(self._latency_sum[route])}"
                )
                out.append(f"rewardsmith_request_duration_seconds_count{route_label} {count}")
            family("rewardsmith_samples_total", "counter", "Samples scored, by route.")
            for route, n in sorted(self._samples.items()):
                out.append(f"rewardsmith_samples_total{_labels([('route', route)])} {n}")
            family(
                "rewardsmith_component_status_total",
                "counter",
                "Component scores by component and status (ok, not_applicable, invalid, error, "
                "timeout).",
            )
            for (component, status), n in sorted(self._components.items()):
                labels = _labels([("component", component), ("status", status)])
                out.append(f"rewardsmith_component_status_total{labels} {n}")
            family("rewardsmith_result_status_total", "counter", "Results by total status.")
            for status, n in sorted(self._rewards.items()):
                out.append(f"rewardsmith_result_status_total{_labels([('status', status)])} {n}")
            family("rewardsmith_rejected_total", "counter", "Requests refused, by reason.")
            for reason, n in sorted(self._rejected.items()):
                out.append(f"rewardsmith_rejected_total{_labels([('reason', reason)])} {n}")
        for name, (text, read) in self._gauges.items():
            family(name, "gauge", text)
            out.append(f"{name} {_number(read())}")
        return "\n".join(out) + "\n"
