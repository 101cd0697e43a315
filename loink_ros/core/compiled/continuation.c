/* Continuing from a configuration (runtime/continuation.py, step for step): the one
 * implementation behind the pose stream's step (a box from the velocity limits) and behind a
 * request whose seed lies beside its pose (a box from the pose's distance, the rule below).
 * Included by kernel.c after pose_newton.c. */

#define REACH_GRID 1048576.0   /* 2^20: continuation.REACH_GRID */
#define REACH_CAP 1.5707963267948966   /* continuation.REACH_CAP: pi / 2 */
#define APPROXIMATE_CAP 0.25            /* continuation.APPROXIMATE_CAP */

/* loink_pose_continue's info fields. */
enum { CONTINUE_POSITION_ERROR, CONTINUE_ROTATION_ERROR, CONTINUE_DRIFTED, CONTINUE_FIELDS };

int loink_continue_fields(void) { return CONTINUE_FIELDS; }

/* Eigenvalues' smallest of a symmetric m x m matrix (row-major, destroyed) by cyclic Jacobi. */
static double smallest_eigenvalue(int m, double *a) {
  for (int sweep = 0; sweep < 50; sweep++) {
    double off = 0.0, diagonal = 0.0;
    for (int i = 0; i < m; i++) {
      diagonal += a[i * m + i] * a[i * m + i];
      for (int j = i + 1; j < m; j++) off += a[i * m + j] * a[i * m + j];
    }
    if (off <= 1e-30 * diagonal || off == 0.0) break;
    for (int p = 0; p < m; p++)
      for (int r = p + 1; r < m; r++) {
        const double apr = a[p * m + r];
        if (apr == 0.0) continue;
        const double theta = (a[r * m + r] - a[p * m + p]) / (2.0 * apr);
        const double t = (theta >= 0.0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
        const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
        for (int k = 0; k < m; k++) {   /* columns p, r */
          const double kp = a[k * m + p], kr = a[k * m + r];
          a[k * m + p] = c * kp - s * kr;
          a[k * m + r] = s * kp + c * kr;
        }
        for (int k = 0; k < m; k++) {   /* rows p, r */
          const double pk = a[p * m + k], rk = a[r * m + k];
          a[p * m + k] = c * pk - s * rk;
          a[r * m + k] = s * pk + c * rk;
        }
      }
  }
  double smallest = a[0];
  for (int i = 1; i < m; i++) smallest = fmin(smallest, a[i * m + i]);
  return smallest;
}

/* How near q is to a singularity: the pose Jacobian's smallest singular value
 * (pose_tracker.smallest_singular_value). */
static double smallest_singular_value(const double *q) {
  double both[POSE_AND_JACOBIAN], gram[36];
  int all[LOINK_N];
  for (int i = 0; i < LOINK_N; i++) all[i] = 1;
  problem_pose_jacobian(q, both);
  free_gram(both + 12, all, 6, 0.0, gram);
  return sqrt(fmax(smallest_eigenvalue(6, gram), 0.0));
}

/* The tip's slowest speed at q with every joint at most at its `velocity` (continuation.
 * agility): the smallest singular value of J diag(velocity), J the pose Jacobian. */
static double agility(const double *q, const double *velocity) {
  double both[POSE_AND_JACOBIAN], gram[36], scaled[6 * LOINK_N];
  int all[LOINK_N];
  problem_pose_jacobian(q, both);
  for (int c = 0; c < LOINK_N; c++) {
    all[c] = 1;
    for (int r = 0; r < 6; r++) scaled[c * 6 + r] = both[12 + c * 6 + r] * velocity[c];
  }
  free_gram(scaled, all, 6, 0.0, gram);
  return sqrt(fmax(smallest_eigenvalue(6, gram), 0.0));
}

/* One step on from `from` (n) towards the pose `target` (12) inside the limits lower/upper
 * (loink_pose.h; continuation.continue_pose). q_out (n); info CONTINUE_FIELDS. Returns 1 where
 * q_out is on the pose within the exact tolerances, else 0. */
int loink_pose_continue(const double *target, int position_only, const double *from,
                        const double *reach, const double *lower, const double *upper,
                        const loink_continue_settings *how, double *q_out, double *info) {
  enum { n = LOINK_N };
  double bounds[2 * n], out[n + POSE_FIELDS], e[6], largest = 0.0;
  for (int i = 0; i < n; i++) {
    bounds[i] = fmax(lower[i], from[i] - reach[i]);
    bounds[n + i] = fmin(upper[i], from[i] + reach[i]);
    largest = fmax(largest, reach[i]);
  }
  /* Track: Newton steps of at most half the reach, so that the box clips no step's direction. */
  pose_problem pp = {target, target + 3, position_only ? 3 : 6, bounds, bounds + n, from, 0.0,
                     how->exact_position, how->exact_rotation, 0.5 * largest};
  memcpy(q_out, from, sizeof(double) * n);
  pose_converge(&pp, q_out, e, POSE_NEWTON_STEPS);
  pose_errors(e, pp.rows, &info[CONTINUE_POSITION_ERROR], &info[CONTINUE_ROTATION_ERROR]);
  info[CONTINUE_DRIFTED] = 0.0;
  if (info[CONTINUE_POSITION_ERROR] > how->exact_position ||
      info[CONTINUE_ROTATION_ERROR] > how->exact_rotation) {
    /* Off the pose: no farther from it than the start (Newton from a far pose can overshoot,
     * and an approximate answer that did would swing back and forth from call to call). */
    double start[n], at_start[POSE_AND_JACOBIAN], e_start[6], end = 0.0;
    memcpy(start, from, sizeof start);
    clip(n, bounds, bounds + n, start);
    problem_pose_jacobian(start, at_start);
    for (int r = 0; r < pp.rows; r++) end += e[r] * e[r];
    if (pose_error(&pp, at_start, e_start) <= end) {
      memcpy(q_out, start, sizeof start);
      pose_errors(e_start, pp.rows, &info[CONTINUE_POSITION_ERROR], &info[CONTINUE_ROTATION_ERROR]);
    }
    return 0;
  }
  /* Drift: down the cost along the self-motion, within the drift box around the answer. */
  double tracked[n], drift[2 * n], time = 0.0;
  memcpy(tracked, q_out, sizeof tracked);
  if (how->velocity)
    for (int i = 0; i < n; i++) time = fmax(time, fabs(tracked[i] - from[i]) / how->velocity[i]);
  for (int i = 0; i < n; i++) {
    const double width = how->drift_share * (how->velocity ? time * how->velocity[i] : reach[i]);
    drift[i] = fmax(bounds[i], tracked[i] - width);
    drift[n + i] = fmin(bounds[n + i], tracked[i] + width);
  }
  loink_pose_solve(1, tracked, target, position_only, drift, from, how->smoothing,
                   how->exact_position, how->exact_rotation, 1, out);
  const double margin = smallest_singular_value(out);
  int keep = margin >= how->singular_margin || margin >= smallest_singular_value(tracked);
  if (keep && how->velocity) keep = agility(out, how->velocity) >= agility(tracked, how->velocity);
  if (keep) {
    memcpy(q_out, out, sizeof(double) * n);
    info[CONTINUE_POSITION_ERROR] = out[n + POSE_POSITION_ERROR];
    info[CONTINUE_ROTATION_ERROR] = out[n + POSE_ROTATION_ERROR];
    info[CONTINUE_DRIFTED] = 1.0;
  }
  return 1;
}

/* A seed farther than this outside the joint limits (rad) is no continuation
 * (continuation.SEED_MARGIN). */
#define SEED_MARGIN 0.01

/* The rule for a request with a seed (continuation.continuation_reach): it continues from the
 * seed when the seed's own pose lies within gate_position (m) and gate_rotation (rad) of the
 * target (an approximate one: wherever it lies); each joint may then move reach_floor +
 * per_metre d_p + per_radian d_r, at most REACH_CAP (approximate: APPROXIMATE_CAP). Returns 0
 * (reach unset) for a request that is no continuation. */
static int continuation_reach(const loink_pose_settings *s, const double *target,
                              int position_only, const double *seed, int approximate, double *reach) {
  double both[POSE_AND_JACOBIAN], e[6], position, rotation;
  pose_problem pp = {target, target + 3, position_only ? 3 : 6, NULL, NULL, NULL, 0.0, 0.0, 0.0, 0.0};
  problem_pose_jacobian(seed, both);
  pose_error(&pp, both, e);
  pose_errors(e, pp.rows, &position, &rotation);
  if (!approximate && !(position <= s->continuation_gate[0] && rotation <= s->continuation_gate[1]))
    return 0;
  /* On a grid of 2^-20 rad, so that the reach is the numpy reference's bit for bit though the
   * pose distance differs from Pinocchio's by rounding. */
  const double box = fmin(floor((s->continuation_reach[0] + s->continuation_reach[1] * position +
                                 s->continuation_reach[2] * rotation) * REACH_GRID) / REACH_GRID,
                           approximate ? APPROXIMATE_CAP : REACH_CAP);
  for (int i = 0; i < LOINK_N; i++) reach[i] = box;
  return 1;
}
