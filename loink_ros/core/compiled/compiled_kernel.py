"""The compiled solve (kernel.c + the problem's generated functions) called through ctypes,
which releases the GIL for the call: concurrent solves run in parallel."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from loink_ros.core.compiled.cpu_features import load_checked
from loink_ros.core.compiled.packed_model import pack
from loink_ros.core.problems.problem import Problem
from loink_ros.core.runtime.model_file import ModelFile

# Columns of KernelResult.info, in kernel.c's order.
PREDICTED, COST, ERROR, CLIPPED, CONVERGED, VIOLATED = range(6)
FIELDS = 6
# Columns of PoseKernelResult.info (kernel.c's pose_solve).
POSITION_ERROR, ROTATION_ERROR, OBJECTIVE, NEWTON_STEPS, DESCENT_STEPS = range(5)
POSE_FIELDS = 5
# Columns of RankedResult.info (loink_pose.h's LOINK_RANKED_*), and the sources' codes.
RANKED_POSITION_ERROR, RANKED_ROTATION_ERROR, RANKED_OBJECTIVE, RANKED_COST, RANKED_SOURCE = range(5)
RANKED_FIELDS = 5
SOURCES = ('prior', 'optimum', 'latent', 'seed', 'restart', 'continuation')
# Fields of loink_pose_continue's info.
CONTINUE_POSITION_ERROR, CONTINUE_ROTATION_ERROR, CONTINUE_DRIFTED = range(3)
CONTINUE_FIELDS = 3
_POINTER, _INT, _REAL = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
# loink_accept: 0 accepts the answer q.
ACCEPT = ctypes.CFUNCTYPE(_INT, _POINTER, ctypes.POINTER(_REAL))


class PoseSettings(ctypes.Structure):
    """loink_pose.h's loink_pose_settings."""

    _fields_ = [('prior_count', _INT), ('restarts', _INT), ('descents', _INT),
                ('max_rounds', _INT), ('continuation_rounds', _INT), ('latent_count', _INT),
                ('network_for_poses', _INT),
                ('inverse_max_iter', _INT), ('inverse_tol', _REAL), ('distinct', _REAL),
                ('exact_position', _REAL), ('exact_rotation', _REAL), ('centre', _POINTER),
                ('spread', _POINTER), ('task_rows', _POINTER), ('task_lower', _POINTER),
                ('task_upper', _POINTER), ('latents', _POINTER),
                ('continuation_gate', _REAL * 2), ('continuation_reach', _REAL * 3),
                ('drift_share', _REAL), ('singular_margin', _REAL), ('velocity', _POINTER)]


class PoseQuery(ctypes.Structure):
    """loink_pose.h's loink_pose_request."""

    _fields_ = [('target', _POINTER), ('position_only', _INT), ('count', _INT),
                ('attempt', _INT), ('lower', _POINTER), ('upper', _POINTER), ('seed', _POINTER),
                ('seed_weight', _REAL), ('tol_position', _REAL), ('tol_rotation', _REAL),
                ('deadline', _REAL), ('approximate', _INT)]


class ContinueSettings(ctypes.Structure):
    """loink_pose.h's loink_continue_settings."""

    _fields_ = [('smoothing', _REAL), ('drift_share', _REAL), ('velocity', _POINTER),
                ('singular_margin', _REAL), ('exact_position', _REAL), ('exact_rotation', _REAL)]


class PlanSettings(ctypes.Structure):
    """loink_pose.h's loink_plan_settings."""

    _fields_ = [('beam', _INT), ('value_share', _INT), ('separation', _REAL),
                ('explore_count', _INT), ('explore_shares', _POINTER), ('lag', _REAL),
                ('smoothing', _REAL), ('exact_position', _REAL), ('exact_rotation', _REAL)]


class PlanQuery(ctypes.Structure):
    """loink_pose.h's loink_plan_request."""

    _fields_ = [('count', _INT), ('poses', _POINTER), ('position_only', _INT),
                ('times', _POINTER), ('velocity', _POINTER), ('jump', _POINTER),
                ('lower', _POINTER), ('upper', _POINTER), ('first_count', _INT),
                ('first', _POINTER), ('first_value', _POINTER)]


# Columns of loink_plan_path's info.
PLAN_ON_TARGET, PLAN_COST = range(2)
PLAN_FIELDS = 2

# loink_pose_ranked(ints, reals, settings, request, accept, context, q_out, info, tried).
RANKED_ARGTYPES = [_POINTER, _POINTER, ctypes.POINTER(PoseSettings), ctypes.POINTER(PoseQuery),
                   ACCEPT, _POINTER, _POINTER, _POINTER, ctypes.POINTER(_INT)]


@dataclass
class RankedResult:
    """found valid answers (q (found, n), info by the RANKED_ columns), or found 0 and the
    closest answer in row 0; the starts refined."""

    q: np.ndarray
    info: np.ndarray
    found: int
    tried: int


@dataclass
class KernelResult:
    """Per row: q (B, n) in joint units, info (B, 6) by the columns above; the iterations per
    monotone layer (max over rows, whole numbers as floats) and the layer inputs (depth, B,
    n), a warm start."""

    q: np.ndarray
    info: np.ndarray
    iterations: np.ndarray
    state: np.ndarray


@dataclass
class InsideResult:
    """Per task: q (B, n), info (B, FIELDS) as KernelResult's, and the latent z (B, n - p)."""

    q: np.ndarray
    info: np.ndarray
    z: np.ndarray


@dataclass
class PoseKernelResult:
    """Per start: the refined q (B, n) and info (B, 5) by the pose columns above."""

    q: np.ndarray
    info: np.ndarray


class CompiledKernel:
    """One model on one problem; the library from compiled.build.compiled_library."""

    def __init__(self, library: Path, model: ModelFile, problem: Problem):
        lib = load_checked(library)
        self._solve, self._forward = lib.loink_solve, lib.loink_forward
        self._solve.argtypes = [_POINTER, _POINTER, _INT, _POINTER, _POINTER, _REAL, _INT,
                                _INT, _POINTER]
        self._forward.argtypes = [_POINTER, _POINTER, _INT, _POINTER, _POINTER, _POINTER]
        self._inside = lib.loink_solve_inside
        self._inside.argtypes = [_POINTER, _POINTER, _INT, _POINTER, _POINTER, _REAL, _INT, _INT,
                                 _POINTER]
        if lib.loink_info_fields() != FIELDS:
            raise RuntimeError(f'{library.name}: unexpected result layout')
        self._pose = getattr(lib, 'loink_pose_solve', None)   # kinematic problems only
        if self._pose is not None:
            self._pose.argtypes = [_INT, _POINTER, _POINTER, _INT, _POINTER, _POINTER, _REAL,
                                   _REAL, _REAL, _INT, _POINTER]
            if lib.loink_pose_fields() != POSE_FIELDS or lib.loink_ranked_fields() != RANKED_FIELDS:
                raise RuntimeError(f'{library.name}: unexpected pose result layout')
            self._ranked = lib.loink_pose_ranked
            self._ranked.argtypes = RANKED_ARGTYPES
            if lib.loink_continue_fields() != CONTINUE_FIELDS:
                raise RuntimeError(f'{library.name}: unexpected continuation result layout')
            if lib.loink_plan_fields() != PLAN_FIELDS:
                raise RuntimeError(f'{library.name}: unexpected plan result layout')
            self._plan = lib.loink_plan_path
            self._plan.argtypes = [ctypes.POINTER(PoseSettings), ctypes.POINTER(PlanSettings),
                                   ctypes.POINTER(PlanQuery), ACCEPT, _POINTER, _POINTER,
                                   _POINTER, _POINTER, _POINTER]
            self._continue = lib.loink_pose_continue
            self._continue.argtypes = [_POINTER, _INT, _POINTER, _POINTER, _POINTER, _POINTER,
                                       ctypes.POINTER(ContinueSettings), _POINTER, _POINTER]
        self.library, self._local = library, threading.local()
        self.ints, self.reals = pack(model, problem)
        self._ints, self._reals = self.ints.ctypes.data, self.reals.ctypes.data
        self.dim, self.task_dim, self.depth = (int(v) for v in self.ints[:3])
        self.check(self._forward(self._ints, self._reals, 0, None, None, None))

    def check(self, status: int) -> None:
        if status != 0:
            raise RuntimeError(f'{self.library.name} does not fit this model '
                               f'(n {self.dim}, p {self.task_dim}, depth {self.depth})')

    def _buffers(self, rows: int) -> tuple[np.ndarray, int, np.ndarray, int]:
        """This thread's input and output buffers for `rows` rows and their addresses: taking
        an array's address costs a microsecond, so each thread keeps its own pair."""
        local = self._local
        if getattr(local, 'rows', 0) < rows:
            n, depth = self.dim, self.depth
            local.inputs = np.empty(rows * n)
            local.out = np.empty(rows * (n + FIELDS) + depth * (rows * n + 1))
            local.addresses = (local.inputs.ctypes.data, local.out.ctypes.data)
            local.rows = rows
        return local.inputs, local.addresses[0], local.out, local.addresses[1]

    def solve(self, y: np.ndarray, z: np.ndarray, tol: float, max_iter: int, refine: bool,
              warm: np.ndarray | None = None) -> KernelResult:
        """Validated solves of tasks y (B, p) with latents z (B, n - p); warm (depth, B, n)."""
        rows, n, p, depth = len(y), self.dim, self.task_dim, self.depth
        if np.shape(y) != (rows, p) or np.shape(z) != (rows, n - p):
            raise ValueError(f'tasks {np.shape(y)} and latents {np.shape(z)}: need '
                             f'({rows}, {p}) and ({rows}, {n - p})')
        if warm is not None:
            warm = np.ascontiguousarray(warm, np.float64)
            if warm.shape != (depth, rows, n):
                raise ValueError(f'warm start of shape {warm.shape}, need {(depth, rows, n)}')
        inputs, inputs_at, out, out_at = self._buffers(rows)
        inputs[:rows * p] = np.ravel(y)
        inputs[rows * p:rows * n] = np.ravel(z)
        self.check(self._solve(self._ints, self._reals, rows, inputs_at,
                               None if warm is None else warm.ctypes.data, tol, max_iter,
                               int(refine), out_at))
        info_at, state_at = rows * n, rows * (n + FIELDS)
        state_end = state_at + depth * rows * n
        return KernelResult(out[:info_at].reshape(rows, n).copy(),
                            out[info_at:state_at].reshape(rows, FIELDS).copy(),
                            out[state_end:state_end + depth].copy(),
                            out[state_at:state_end].reshape(depth, rows, n).copy())

    def solve_inside(self, y: np.ndarray, tol: float, max_iter: int, refine: bool,
                     warm: np.ndarray | None = None) -> InsideResult:
        """The validated learned optimum inside the limits of tasks y (B, p)
        (runtime/bounded_latent.py); warm (depth, B, n) warm-starts z = 0's inverse."""
        y = np.ascontiguousarray(y, np.float64)
        rows, n, p = len(y), self.dim, self.task_dim
        if y.shape != (rows, p):
            raise ValueError(f'tasks {y.shape}: need ({rows}, {p})')
        if warm is not None:
            warm = np.ascontiguousarray(warm, np.float64)
            if warm.shape != (self.depth, rows, n):
                raise ValueError(f'warm start of shape {warm.shape}, need {(self.depth, rows, n)}')
        out = np.empty(rows * (n + FIELDS + n - p))
        self.check(self._inside(self._ints, self._reals, rows, y.ctypes.data,
                                None if warm is None else warm.ctypes.data, tol, max_iter,
                                int(refine), out.ctypes.data))
        info_at, z_at = rows * n, rows * (n + FIELDS)
        return InsideResult(out[:info_at].reshape(rows, n), out[info_at:z_at].reshape(rows, FIELDS),
                            out[z_at:].reshape(rows, n - p))

    def forward(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """G of configurations q (B, n) in joint units: w (B, n) in network units
        (normalised task, latent) and the monotone layers' inputs (depth, B, n)."""
        q = np.ascontiguousarray(np.atleast_2d(q), np.float64)
        w, state = np.empty_like(q), np.empty((self.depth, len(q), self.dim))
        self.check(self._forward(self._ints, self._reals, len(q), q.ctypes.data, w.ctypes.data,
                                 state.ctypes.data))
        return w, state

    @property
    def has_pose(self) -> bool:
        """Whether pose_solve is there (a kinematic problem's build)."""
        return self._pose is not None

    def pose_solve(self, starts: np.ndarray, target: np.ndarray, position_only: bool,
                   bounds: np.ndarray, seed: np.ndarray | None, weight: float,
                   tolerance: tuple[float, float], descents: int) -> PoseKernelResult:
        """runtime/pose_refine.refine_poses of the starts (B, n): `target` (12,) is the
        position and the rotation row by row, `bounds` (2, n) the lower and upper limits."""
        starts = np.ascontiguousarray(starts, np.float64)
        rows, n = starts.shape
        target = np.ascontiguousarray(target, np.float64)
        bounds = np.ascontiguousarray(bounds, np.float64)
        if target.shape != (12,) or bounds.shape != (2, n) or n != self.dim:
            raise ValueError(f'starts {starts.shape}, target {target.shape}, bounds '
                             f'{bounds.shape}: need (B, {self.dim}), (12,), (2, {self.dim})')
        seed_at = None
        if seed is not None:
            seed = np.ascontiguousarray(seed, np.float64)
            seed_at = seed.ctypes.data
        out = np.empty(rows * (n + POSE_FIELDS))
        self._pose(rows, starts.ctypes.data, target.ctypes.data, int(position_only),
                   bounds.ctypes.data, seed_at, float(weight), float(tolerance[0]),
                   float(tolerance[1]), int(descents), out.ctypes.data)
        return PoseKernelResult(out[:rows * n].reshape(rows, n),
                                out[rows * n:].reshape(rows, POSE_FIELDS))

    def pose_continue(self, target: np.ndarray, position_only: bool, start: np.ndarray,
                      reach: np.ndarray, lower: np.ndarray, upper: np.ndarray, smoothing: float,
                      drift_share: float, velocity: np.ndarray | None, singular_margin: float,
                      exact: tuple[float, float]) -> tuple[bool, np.ndarray, np.ndarray]:
        """loink_pose_continue (runtime/continuation.continue_pose): (on the pose, q (n,),
        info by the CONTINUE_ fields); `velocity` None: a stream's drift box."""
        arrays = [np.ascontiguousarray(a, np.float64) for a in (target, start, reach, lower, upper)]
        if arrays[0].shape != (12,) or any(a.shape != (self.dim,) for a in arrays[1:]):
            raise ValueError(f'target (12,) and four ({self.dim},) arrays are needed')
        target, start, reach, lower, upper = arrays
        if velocity is not None:
            velocity = np.ascontiguousarray(velocity, np.float64)
        q, info = np.empty(self.dim), np.empty(CONTINUE_FIELDS)
        how = ContinueSettings(float(smoothing), float(drift_share),
                               None if velocity is None else velocity.ctypes.data,
                               float(singular_margin), float(exact[0]), float(exact[1]))
        exact_pose = self._continue(target.ctypes.data, int(position_only), start.ctypes.data,
                                    reach.ctypes.data, lower.ctypes.data, upper.ctypes.data,
                                    ctypes.byref(how), q.ctypes.data, info.ctypes.data)
        return bool(exact_pose), q, info

    def plan_path(self, settings: PoseSettings, how: PlanSettings, query: PlanQuery,
                  accept: ACCEPT) -> tuple[np.ndarray, np.ndarray]:
        """loink_plan_path (runtime/cartesian_path.py): (q (planned, n), info by the PLAN_
        columns); `how` and `query` hold the addresses of arrays the caller keeps alive."""
        count, beam, n = query.count, how.beam, self.dim
        work = np.empty(count * beam * (n + 2))
        links = np.empty(count * (beam + 1), np.int32)
        q, info = np.empty((count, n)), np.empty((count, PLAN_FIELDS))
        planned = self._plan(ctypes.byref(settings), ctypes.byref(how), ctypes.byref(query),
                             accept, None, work.ctypes.data, links.ctypes.data, q.ctypes.data,
                             info.ctypes.data)
        if planned < 0:
            raise ValueError('loink_plan_path: bad settings or request')
        return q[:planned], info[:planned]

    def pose_ranked(self, settings: PoseSettings, query: PoseQuery, count: int,
                    accept: ACCEPT) -> RankedResult:
        """loink_pose_ranked: `settings` and `query` hold the addresses of arrays the caller
        keeps alive; `accept` is the caller's check of each answer within the tolerances."""
        q = np.empty((count, self.dim))
        info = np.empty((count, RANKED_FIELDS))
        tried = _INT(0)
        found = self._ranked(self._ints, self._reals, ctypes.byref(settings), ctypes.byref(query),
                             accept, None, q.ctypes.data, info.ctypes.data, ctypes.byref(tried))
        self.check(min(found, 0))
        rows = max(found, 1)
        return RankedResult(q[:rows], info[:rows], found, tried.value)
