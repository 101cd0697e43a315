"""The `ops` backends that Magneto's kinematics and cost are written against, once for all.

A scalar is a numpy array of shape (B,) under NUMPY (a batch), a float under MATH (one
configuration: less overhead than numpy) or a CasADi SX/MX scalar under casadi_ops(). Besides
the usual functions and if_else(condition, a, b), each backend has neg_log(s) = -log(s), +inf
where s <= 0 (the barriers' infeasible marker: a cost is total, never an exception), and asin
and acos clipped
to [-1, 1] against round-off of unit vectors (CasADi: plain, for smooth derivatives, unless
clipped for the compiled runtime, which must give the numpy backend's numbers).
"""

import math
from types import SimpleNamespace

import numpy as np


def _neg_log_math(s: float) -> float:
    return -math.log(s) if s > 0.0 else math.inf


def _neg_log_numpy(s: np.ndarray) -> np.ndarray:
    positive = s > 0.0
    return np.where(positive, -np.log(np.where(positive, s, 1.0)), np.inf)


MATH = SimpleNamespace(name='math', sin=math.sin, cos=math.cos, sqrt=math.sqrt, log=math.log,
                       exp=math.exp, fabs=abs, fmax=max, atan2=math.atan2,
                       asin=lambda x: math.asin(min(1.0, max(-1.0, x))),
                       acos=lambda x: math.acos(min(1.0, max(-1.0, x))), log1p=math.log1p,
                       neg_log=_neg_log_math, if_else=lambda c, a, b: a if c else b)
NUMPY = SimpleNamespace(name='numpy', sin=np.sin, cos=np.cos, sqrt=np.sqrt, log=np.log,
                        exp=np.exp, fabs=np.abs, fmax=np.maximum, atan2=np.arctan2,
                        asin=lambda x: np.arcsin(np.clip(x, -1.0, 1.0)),
                        acos=lambda x: np.arccos(np.clip(x, -1.0, 1.0)), log1p=np.log1p,
                        neg_log=_neg_log_numpy, if_else=np.where)


def casadi_ops(clip: bool = False) -> SimpleNamespace:
    """The CasADi backend (imported on first use: the runtime does not need CasADi); `clip`
    clips asin's and acos's arguments as the numpy backend does."""
    import casadi as ca

    def clipped(f):
        return (lambda x: f(ca.fmin(1.0, ca.fmax(-1.0, x)))) if clip else f
    return SimpleNamespace(name='casadi', sin=ca.sin, cos=ca.cos, sqrt=ca.sqrt, log=ca.log,
                           exp=ca.exp, fabs=ca.fabs, fmax=ca.fmax, atan2=ca.atan2,
                           asin=clipped(ca.asin), acos=clipped(ca.acos), log1p=ca.log1p,
                           neg_log=lambda s: -ca.log(s), if_else=ca.if_else)
