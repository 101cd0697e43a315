"""Wall-clock timing shared by the benches."""

import time
from collections.abc import Callable

REPEATS = 3
TIMING = f'best of {REPEATS} wall times per target, median or mean over targets, 1 BLAS thread'


def best_of(func: Callable[[], object], repeats: int = REPEATS) -> tuple[float, object]:
    """Best of `repeats` wall times in ms (robust to other load on the machine), and the result."""
    best, out = float('inf'), None
    for _ in range(repeats):
        began = time.perf_counter()
        out = func()
        best = min(best, time.perf_counter() - began)
    return 1e3 * best, out
