"""Magneto's settings: physics, cost weights, feasibility, nominal stance, bounds, sampling
ranges (docs/MAGNETO.md says why each value)."""

import numpy as np

# Physics and cost.
GRAVITY = 9.81
FRICTION = 0.7            # foot friction coefficient mu
SMOOTH = 0.2              # N: width of the smooth max(0, .) and of the smooth max over feet
TANGENT_EPS = 0.01        # N: ||t|| = sqrt(t.t + eps^2)
W_POSITION = 10.0         # N/m^2: body offset from the foothold centroid
W_ANGLE = 10.0            # N/rad^2: yaw, roll, pitch
W_BARRIER = 0.3           # N: joint-limit log-barrier
W_GIMBAL = 1.0            # N: gimbal-limit log-barrier

# The footprint frame F lies on the surface: z out of it (the normal), x uphill, y across.
SURFACE_NORMAL = np.array([0.0, 0.0, 1.0])

# Feasibility.
CLEARANCE = 0.03          # m: body corners above the surface
MAGNET_FORCE = 100.0      # N: a stance needing more than this cannot hold (public 100-147 N)
FEASIBILITY_TOL = 1e-9    # rad, m: slack of the gimbal and clearance conditions
BODY_CORNERS = [(sx * 0.15, sy * 0.11, 0.0) for sx in (1, -1) for sy in (1, -1)]

# Nominal stance (ROBOTS.md): coxa 0, femur pi/20, tibia -pi/2 - pi/20, gimbals flat.
STANCE_JOINTS = np.tile([0.0, np.pi / 20, -np.pi / 2 - np.pi / 20], 4)
# m: body height of the example configuration (nominal footholds, legs by closed-form IK).
EXAMPLE_HEIGHT = 0.07

# Configuration bounds: body pose, and operating ranges of coxa / femur / tibia inside the
# URDF limits (docs/MAGNETO.md: they cut odd stances with a foot almost under its hip; no
# optimum comes near them). The joint barrier uses the URDF limits.
POSE_NAMES = ['body_x', 'body_y', 'body_yaw', 'body_roll', 'body_pitch', 'body_height']
POSE_LOWER = np.array([-0.12, -0.12, -0.4, -0.4, -0.4, 0.03])
POSE_UPPER = np.array([0.12, 0.12, 0.4, 0.4, 0.4, 0.12])
JOINT_LOWER = np.array([-1.0, -1.0, -2.1])
JOINT_UPPER = np.array([1.0, 0.6, -0.35])

# Targets: each foothold within +/-FOOT_RANGE of its nominal place, height in HEIGHT_RANGE.
FOOT_RANGE = 0.03
HEIGHT_RANGE = (0.05, 0.10)
# Training data: a little wider, feet up to +/-FOOT_Z off the surface, body offsets around
# the foothold centroid within BODY_OFFSET (x, y) and ANGLE_RANGE (yaw, roll, pitch).
DATA_MARGIN = 0.01
FOOT_Z = 0.02
BODY_OFFSET = 0.07
ANGLE_RANGE = 0.35
