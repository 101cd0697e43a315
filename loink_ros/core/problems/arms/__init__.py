"""Serial arms from a URDF (Pinocchio): the kinematic problem, arms from a robot
description, the shipped arms (planar3, Panda, xArm7), their CasADi form, pose chart,
self-collision and reach."""
