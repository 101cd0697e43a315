"""splitmix64 draws, bit-for-bit those of the compiled ranked pose solve (kernel.c), so the
numpy reference and the C path start from the same configurations."""

import math

import numpy as np

MASK = (1 << 64) - 1


class SplitMix:
    """One stream of uniform and normal draws from a 64-bit seed."""

    def __init__(self, seed: int):
        self.state = seed & MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self) -> float:
        """In [0, 1), 53 bits."""
        return (self.next() >> 11) * 2.0 ** -53

    def normal(self) -> float:
        """Box-Muller, one normal per two uniforms."""
        u1, u2 = self.uniform(), self.uniform()
        return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * 3.141592653589793 * u2)

    def uniform_rows(self, lower: np.ndarray, upper: np.ndarray, rows: int) -> np.ndarray:
        """(rows, n) uniform in [lower, upper], row by row."""
        return np.array([[lo + self.uniform() * (hi - lo) for lo, hi in zip(lower, upper)]
                         for _ in range(rows)]).reshape(rows, len(lower))

    def normal_rows(self, std: np.ndarray, rows: int) -> np.ndarray:
        """(rows, n) normal with per-column std, row by row."""
        return np.array([[s * self.normal() for s in std]
                         for _ in range(rows)]).reshape(rows, len(std))


def prior_stream(attempt: int) -> SplitMix:
    """The prior's draws of attempt k (kernel.c's prior_stream)."""
    return SplitMix(2 * attempt)


def restart_stream(attempt: int) -> SplitMix:
    """The fallback rounds' uniform starts of attempt k (kernel.c's restart_stream)."""
    return SplitMix(2 * attempt + 1)
