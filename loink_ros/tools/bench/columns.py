"""Per-target bench rows as columns, summarised over the targets."""

import numpy as np


class Columns(dict):
    """{figure: float array over the targets} from rows (dicts with the same keys); the
    summaries skip NaN, a figure that does not apply to a target."""

    def __init__(self, rows: list[dict]):
        super().__init__({k: np.array([r[k] for r in rows], dtype=float) for k in rows[0]})

    def median(self, key: str) -> float:
        return float(np.nanmedian(self[key]))

    def p95(self, key: str) -> float:
        return float(np.nanpercentile(self[key], 95))

    def mean(self, key: str) -> float:
        return float(np.nanmean(self[key]))
