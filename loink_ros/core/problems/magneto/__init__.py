"""Magneto, the magnetic wall-climbing quadruped (paper Table I): its parameters, geometry,
kinematics, adhesion, cost, feasibility, leg IK, sampling and CasADi form, one concept each."""
