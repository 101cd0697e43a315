"""jsrm's own symbolic derivation of one HSA segment, solved where ours is: run as a script
(`python test/jsrm_one_segment.py`), it prints JSON, for each gravity and each of 6 twists,
the steady state jsrm's closed forms balance at (started beside ours) and its end-effector
pose there. The derivation takes about a minute: conftest.py starts this in the background
when test_hsa_statics.py is collected, so it runs beside the tests before it."""

import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

GRAVITIES = ([0.0, 9.81], [0.0, 0.0])
SEED, TWISTS = 7, 6


def jsrm_functions():
    """G(xi), K(xi), alpha(xi, phi), chiee(xi) of jsrm's derivation (in memory: no pickle is
    read) for the FPU parameters, as numpy functions of the gravity."""
    import sympy as sp
    from jsrm.symbolic_derivation.planar_hsa import symbolically_derive_planar_hsa_model

    from loink_ros.core.problems.hsa.parameters import fpu_control
    with redirect_stdout(io.StringIO()):   # it prints every expression
        derived = symbolically_derive_planar_hsa_model(1, num_rods_per_segment=2, simplify=False)
    p = fpu_control(1)
    values = {'th0': 0.0, 'l': p.rod_length, 'lpc': p.lpc, 'ldc': p.ldc, 'h': p.h, 'rout': p.rout,
              'rin': p.rin, 'roff': p.roff, 'kappa_b_eq': 0.0 * p.h, 'sigma_sh_eq': 0.0 * p.h,
              'sigma_a_eq': 1.0 + 0.0 * p.h, 'C_varepsilon': p.C_varepsilon, 'pcudim': p.platform,
              'rhor': p.rhor, 'rhop': p.rhop, 'rhoec': p.rhoec, 'S_b_hat': p.S_b_hat,
              'S_sh_hat': p.S_sh_hat, 'S_a_hat': p.S_a_hat, 'S_b_sh': p.S_b_sh, 'C_S_b': p.C_S_b,
              'C_S_sh': p.C_S_sh, 'C_S_a': p.C_S_a, 'mpl': 0.0, 'CoGpl': [0.0, 0.0],
              'chiee_off': [0.0, 0.0, 0.0]}

    def functions(gravity):
        subs = {}
        for key, symbols in derived['params_syms'].items():
            if key in values or key == 'g':
                numbers = np.ravel(gravity if key == 'g' else values[key])
                symbols = symbols if isinstance(symbols, list) else [symbols]
                subs.update(zip(symbols, map(float, numbers)))
        exps, state = derived['exps'], derived['state_syms']
        xi, phi = state['xi'], state['phi']
        return {name: sp.lambdify(args, exps[name].subs(subs), 'numpy')
                for name, args in (('G', [xi]), ('K', [xi]), ('alpha', [xi, phi]),
                                   ('chiee', [xi]))}
    return functions


def solved() -> dict:
    """Per gravity: the twists, our steady states, jsrm's, and jsrm's poses there."""
    import dataclasses

    from scipy.optimize import root

    from loink_ros.core.problems.hsa.parameters import fpu_control
    from loink_ros.core.problems.hsa.statics import HsaStatics
    functions, out = jsrm_functions(), {}
    for gravity in GRAVITIES:
        jsrm = functions(gravity)
        ours = HsaStatics(dataclasses.replace(fpu_control(1), g=np.array(gravity)))
        rows = []
        for phi in np.random.default_rng(SEED).uniform(0.0, ours.params.phi_max, (TWISTS, 2)):
            xi = ours.steady_state(phi[None])[0]

            def balance(x, phi=phi, jsrm=jsrm):
                return (np.ravel(jsrm['G'](x)) + np.ravel(jsrm['K'](x))
                        - np.ravel(jsrm['alpha'](x, phi))).astype(float)
            # jsrm's closed forms divide by kappa_b: start beside our answer, off kappa_b = 0.
            theirs = root(balance, xi + 1e-3, tol=1e-14, method='hybr').x
            pose = np.ravel(jsrm['chiee'](theirs)).astype(float)
            rows.append({'phi': phi.tolist(), 'xi': theirs.tolist(), 'pose': pose.tolist()})
        out[json.dumps(gravity)] = rows
    return out


if __name__ == '__main__':
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    json.dump(solved(), sys.stdout)
