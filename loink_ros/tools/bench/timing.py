"""Wall-clock timing shared by the benches."""

import os
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

REPEATS = 3
TIMING = (f'one unmeasured call, then best of {REPEATS} wall times per target, median or mean '
          'over targets, 1 BLAS thread')


def best_of(func: Callable[[], object], repeats: int = REPEATS) -> tuple[float, object]:
    """Best of `repeats` wall times in ms (robust to other load on the machine), and the
    result; one unmeasured call first, so every method is timed warm (caches, allocations)."""
    func()
    best, out = float('inf'), None
    for _ in range(repeats):
        began = time.perf_counter()
        out = func()
        best = min(best, time.perf_counter() - began)
    return 1e3 * best, out


def describe(values) -> dict:
    """Mean, median, min and max of per-target figures."""
    v = np.asarray(values, float)
    return {'mean': float(v.mean()), 'median': float(np.median(v)), 'min': float(v.min()),
            'max': float(v.max())}


def speedups(slow_ms: np.ndarray, fast_ms: np.ndarray) -> dict:
    """Per-target time ratios slow / fast (mean, median, min, max) and the ratio of the means."""
    ratio = np.asarray(slow_ms, float) / np.asarray(fast_ms, float)
    return {**describe(ratio), 'of_means': float(np.mean(slow_ms) / np.mean(fast_ms))}


def load_average() -> list[float]:
    """The machine's 1, 5 and 15 minute load averages (timings are only comparable in one run)."""
    return [round(x, 2) for x in os.getloadavg()]


def single_start_figures(col: dict[str, np.ndarray]) -> dict:
    """The single-start optimiser's success, regret and time, and LOInK's speedups over it
    (columns single_ok, single_regret, single_ms, refined_ms, raw_ms, one row per target)."""
    regret = col['single_regret']
    return {
        'single_start': 'SLSQP, one start (the middle of the joint ranges), same cost and constraints',
        'single_start_success_fraction': float(np.mean(col['single_ok'])),
        'single_start_median_regret': float(np.nanmedian(regret)),
        'single_start_p95_regret': float(np.nanpercentile(regret, 95)),
        'single_start_max_regret': float(np.nanmax(regret)),
        'single_start_time_ms_median': float(np.nanmedian(col['single_ms'])),
        **{f'single_start_speedup_{k}': v
           for k, v in speedups(col['single_ms'], col['refined_ms']).items()},
        'single_start_speedup_unrefined': speedups(col['single_ms'], col['raw_ms']),
    }


def thread_scaling(solve: Callable[[object], object], tasks: Sequence,
                   threads: Sequence[int] = (1, 2), rounds: int = 20) -> dict:
    """Solves per second when `threads` threads each solve their share of the `tasks`
    (every task `rounds` times) in a plain loop, and the speed-up over one thread: how far
    the GIL lets concurrent calls scale."""
    work = list(tasks) * rounds
    rates = {}
    for count in threads:
        shares = [work[k::count] for k in range(count)]
        for task in work[:count]:
            solve(task)                                # warm: buffers, caches
        workers = [threading.Thread(target=lambda share=share: [solve(t) for t in share])
                   for share in shares]
        began = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        rates[count] = len(work) / (time.perf_counter() - began)
    return {'solves_per_s': {str(k): v for k, v in rates.items()},
            'speedup': {str(k): v / rates[threads[0]] for k, v in rates.items()},
            'cpus': os.cpu_count()}
