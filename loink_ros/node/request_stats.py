"""Counts and solve times of the requests a node served, for /diagnostics."""

import threading
from collections import Counter, deque

import numpy as np

# Solve times kept for the percentiles: the most recent requests only.
WINDOW = 1000


class RequestStats:
    """Thread-safe: every service handler records into one instance."""

    def __init__(self):
        self.lock = threading.Lock()
        self.served: Counter[str] = Counter()             # service -> requests answered
        self.failures: Counter[tuple[str, str]] = Counter()   # (service, code name) -> count
        self.times_ms: deque[float] = deque(maxlen=WINDOW)

    def record(self, service: str, failure: str | None, solve_time_ms: float) -> None:
        """One answered request; `failure` is its error code's name, None on success."""
        with self.lock:
            self.served[service] += 1
            if failure is not None:
                self.failures[service, failure] += 1
            self.times_ms.append(solve_time_ms)

    def failed_with(self, codes: tuple[str, ...]) -> int:
        """Requests of any service that failed with one of these code names."""
        with self.lock:
            return sum(n for (_, code), n in self.failures.items() if code in codes)

    def summary(self) -> dict[str, str]:
        """Key -> value strings: totals, failures by code, p50/p99 over the window."""
        with self.lock:
            served, failures, times = dict(self.served), dict(self.failures), list(self.times_ms)
        values = {'requests served': str(sum(served.values()))}
        values.update({f'{service} served': str(count)
                       for service, count in sorted(served.items())})
        values.update({f'{service} failed {code}': str(count)
                       for (service, code), count in sorted(failures.items())})
        for name, q in (('p50', 50), ('p99', 99)):
            value = f'{np.percentile(times, q):.3f}' if times else 'n/a'
            values[f'solve time {name} (ms, last {WINDOW})'] = value
        return values
