"""Parameters of a planar soft manipulator of handed-shearing-auxetic (HSA) segments.

The values are those of jsrm 0.0.18 (JAX Soft Robot Modelling, MIT licence; the group that
built the real planar HSA robots), `jsrm/parameters/hsa_params.py`: the FPU control model
(`PARAMS_FPU_CONTROL`: `generate_base_params_for_fpu(num_rods_per_segment=2,
rod_multiplier=2)`). Each segment has two virtual rods (each standing for two physical
rods: rod_multiplier 2 doubles their mass and stiffness), handedness [1, 1], offsets
-/+24 mm from the centreline. Every per-rod array is (segments, 2), every per-segment array
(segments,). Units: m, kg, rad, N.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RODS = 2                      # virtual rods per segment
ROD_MULTIPLIER = 2            # physical rods per virtual rod
PHI_MAX = np.deg2rad(200.0)   # twist range [0, PHI_MAX] of each rod (FPU)


@dataclass(frozen=True)
class HsaParameters:
    """One planar HSA robot; `segments` stacked from the base up."""

    segments: int
    rod_length: np.ndarray    # l, rod length (segments,)
    lpc: np.ndarray           # proximal cap length (segments,)
    ldc: np.ndarray           # distal cap length (segments,)
    platform: np.ndarray      # platform width, height, depth (segments, 3)
    rout: np.ndarray          # rod outer radius (segments, 2)
    rin: np.ndarray           # rod inner radius (segments, 2)
    roff: np.ndarray          # rod offset from the centreline (segments, 2)
    h: np.ndarray             # handedness (segments, 2)
    rhor: np.ndarray          # rod density (segments, 2)
    rhop: np.ndarray          # platform density (segments,)
    rhoec: np.ndarray         # end-cap density (segments,)
    g: np.ndarray             # gravity (2,): along the robot's axis
    strain_rest: np.ndarray   # rest strains [kappa_b, sigma_sh, sigma_a] of each rod (3,)
    C_varepsilon: np.ndarray  # rest-length elongation per twist (segments, 2)
    S_b_hat: np.ndarray       # nominal bending stiffness (segments, 2)
    S_sh_hat: np.ndarray      # nominal shear stiffness (segments, 2)
    S_a_hat: np.ndarray       # nominal axial stiffness (segments, 2)
    S_b_sh: np.ndarray        # bending-shear coupling (segments, 2)
    C_S_b: np.ndarray         # change of bending stiffness per twist (segments, 2)
    C_S_sh: np.ndarray        # change of shear stiffness per twist (segments, 2)
    C_S_a: np.ndarray         # change of axial stiffness per twist (segments, 2)
    phi_max: float            # twist range [0, phi_max] of each rod

    @property
    def inputs(self) -> int:
        """Actuation inputs: one twist angle per rod."""
        return self.segments * RODS


def fpu_control(segments: int = 3) -> HsaParameters:
    """jsrm's FPU control parameters for `segments` identical segments."""
    rods = np.ones((segments, RODS))
    each = np.ones(segments)
    m = ROD_MULTIPLIER
    return HsaParameters(
        segments=segments,
        rod_length=59e-3 * each, lpc=25e-3 * each, ldc=14e-3 * each,
        platform=np.tile([80e-3, 12e-3, 80e-3], (segments, 1)),
        rout=25.4e-3 / 2 * rods, rin=(25.4e-3 / 2 - 2.43e-3) * rods,
        roff=np.tile([-24e-3, 24e-3], (segments, 1)), h=rods.copy(),
        rhor=798.38 * m * rods, rhop=925.0 * each, rhoec=710.4 * m * each,
        g=np.array([0.0, 9.81]), strain_rest=np.array([0.0, 0.0, 1.0]),
        C_varepsilon=0.00984819 * rods,
        S_b_hat=5.71346377e-04 * m * rods, S_sh_hat=5.91462074e-01 * m * rods,
        S_a_hat=5.66472469 * m * rods, S_b_sh=4.48419541e-03 * m * rods,
        C_S_b=-9.67560524e-06 * m * rods, C_S_sh=-4.75687961e-04 * m * rods,
        C_S_a=0.01508165 * m * rods,
        phi_max=float(PHI_MAX))
