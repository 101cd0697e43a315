/* Pose refinement and cost descent along the self-motion (runtime/pose_refine.py, step for
 * step, with the same constants): Gauss-Newton onto a pose inside bounds, descent of the
 * objective along the self-motion, loink_pose_solve over a batch of starts. Included by
 * kernel.c (LOINK_HAS_POSE): it uses the network's helpers and the generated kinematics. */
#define POSE_CONVERGED 1e-12
#define POSE_NEWTON_STEPS 30
#define POSE_ABANDON_STEP 15
#define POSE_ABANDON_ERROR 0.1
#define POSE_RETRACT_STEPS 8
#define POSE_DESCENT_STEPS 20
#define POSE_DESCENT_SEPARATION 0.6
#define POSE_STATIONARY 1e-10
#define POSE_POLISH 1e-5
#define POSE_DAMPING_FLOOR 1e-12
#define POSE_DAMPING_GAIN 1e-3
#define POSE_MAX_STEP 1.0
#define POSITION_MAX_STEP 0.5
#define POSE_TWO_PI 6.283185307179586
#define POSE_FULL_TURN (POSE_TWO_PI - 1e-3)
#define POSE_FIRST_STEP 0.5
#define POSE_BACKTRACKS 8
#define POSE_SMALL_SINE 1e-6

typedef struct {
  const double *position, *rotation;   /* target: 3, and 9 row by row */
  int rows;                            /* 6, or 3 for position only */
  const double *lower, *upper, *seed;  /* seed NULL: the cost alone */
  double weight, tol_position, tol_rotation;
  double max_step;                     /* largest Newton step (rad); 0: POSE_/POSITION_MAX_STEP */
} pose_problem;

enum { POSE_POSITION_ERROR, POSE_ROTATION_ERROR, POSE_OBJECTIVE, POSE_NEWTON, POSE_DESCENT,
       POSE_FIELDS };

int loink_pose_fields(void) { return POSE_FIELDS; }

/* log(M) of a rotation given row by row (rotation_chart.rotation_vector). */
static void rotation_vector(const double *m, double *r) {
  double s[3] = {0.5 * (m[7] - m[5]), 0.5 * (m[2] - m[6]), 0.5 * (m[3] - m[1])};
  double c = 0.5 * (m[0] + m[4] + m[8] - 1.0);
  double sine = sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
  double ratio = sine < POSE_SMALL_SINE ? 1.0 + sine * sine / 6.0
                                        : atan2(sine, c) / fmax(sine, POSE_SMALL_SINE);
  for (int i = 0; i < 3; i++) r[i] = ratio * s[i];
}

/* The tip pose (12: position, rotation row by row) then its Jacobian (6 x n, column-major)
 * at q, in one generated function: they share the forward kinematics. */
#define POSE_AND_JACOBIAN (12 + 6 * LOINK_N)

/* [p* - p; log(R* R^T)] (6, or 3 for position only) from problem_pose_jacobian's pose;
 * returns its squared norm. */
static double pose_error(const pose_problem *pp, const double *pose, double *e) {
  double m[9];
  for (int i = 0; i < 3; i++) e[i] = pp->position[i] - pose[i];
  if (pp->rows == 6) {
    const double *rot = pose + 3;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        double s = 0.0;
        for (int k = 0; k < 3; k++) s += pp->rotation[i * 3 + k] * rot[j * 3 + k];
        m[i * 3 + j] = s;
      }
    rotation_vector(m, e + 3);
  }
  double norm = 0.0;
  for (int i = 0; i < pp->rows; i++) norm += e[i] * e[i];
  return norm;
}

static void pose_errors(const double *e, int rows, double *position, double *rotation) {
  *position = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
  *rotation = rows == 6 ? sqrt(e[3] * e[3] + e[4] * e[4] + e[5] * e[5]) : 0.0;
}

/* gram = J_free J_free^T + damping I over the free columns (J column-major 6 x n). */
static void free_gram(const double *jac, const int *free, int rows, double damping, double *gram) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < rows; c++) {
      double s = 0.0;
      for (int k = 0; k < LOINK_N; k++)
        if (free[k]) s += jac[k * 6 + r] * jac[k * 6 + c];
      gram[r * rows + c] = s + (r == c ? damping : 0.0);
    }
}

static const int revolute[LOINK_N] = LOINK_REVOLUTE;

/* Damped Gauss-Newton inside the limits (pose_refine.converge); returns the steps taken. */
static int pose_converge(const pose_problem *pp, double *q, double *e, int steps) {
  enum { n = LOINK_N };
  double both[POSE_AND_JACOBIAN], gram[36], x[6], dq[n];
  const double *jac = both + 12;
  int free[n], turns[n];
  const int rows = pp->rows;
  for (int c = 0; c < n; c++) turns[c] = revolute[c] && pp->upper[c] - pp->lower[c] >= POSE_FULL_TURN;
  clip(n, pp->lower, pp->upper, q);
  problem_pose_jacobian(q, both);
  double norm = pose_error(pp, both, e);
  for (int step = 0; step < steps; step++) {
    if (norm <= POSE_CONVERGED * POSE_CONVERGED ||
        (step == POSE_ABANDON_STEP && norm > POSE_ABANDON_ERROR * POSE_ABANDON_ERROR))
      return step;
    for (int c = 0; c < n; c++) {
      double push = 0.0;
      for (int r = 0; r < rows; r++) push += jac[c * 6 + r] * e[r];
      free[c] = turns[c] || !((q[c] <= pp->lower[c] && push < 0.0) || (q[c] >= pp->upper[c] && push > 0.0));
    }
    free_gram(jac, free, rows, POSE_DAMPING_FLOOR + POSE_DAMPING_GAIN * norm, gram);
    memcpy(x, e, sizeof(double) * rows);
    if (lu_solve(rows, gram, x)) return steps;
    double largest = 0.0;
    for (int c = 0; c < n; c++) {
      double s = 0.0;
      if (free[c])
        for (int r = 0; r < rows; r++) s += jac[c * 6 + r] * x[r];
      dq[c] = s;
      if (fabs(s) > largest) largest = fabs(s);
    }
    const double cap = pp->max_step > 0.0 ? pp->max_step : rows == 6 ? POSE_MAX_STEP : POSITION_MAX_STEP;
    double scale = largest > cap ? cap / largest : 1.0;
    for (int c = 0; c < n; c++) {
      if (free[c]) q[c] += scale == 1.0 ? dq[c] : dq[c] * scale;
      if (turns[c] && q[c] > pp->upper[c] && q[c] - POSE_TWO_PI >= pp->lower[c]) q[c] -= POSE_TWO_PI;
      if (turns[c] && q[c] < pp->lower[c] && q[c] + POSE_TWO_PI <= pp->upper[c]) q[c] += POSE_TWO_PI;
    }
    clip(n, pp->lower, pp->upper, q);
    problem_pose_jacobian(q, both);
    norm = pose_error(pp, both, e);
  }
  return steps;
}

static double objective(const pose_problem *pp, const double *q) {
  double f = true_cost(q);
  if (pp->weight > 0.0)
    for (int i = 0; i < LOINK_N; i++) f += pp->weight * (q[i] - pp->seed[i]) * (q[i] - pp->seed[i]);
  return f;
}

static void objective_gradient(const pose_problem *pp, const double *q, double *g) {
  problem_cost_gradient(q, g);
  if (pp->weight > 0.0)
    for (int i = 0; i < LOINK_N; i++) g[i] += 2.0 * pp->weight * (q[i] - pp->seed[i]);
}

/* -g projected on the null space of the free columns (pose_refine._projected_descent). */
static void projected_descent(const pose_problem *pp, const double *jac, const double *g,
                              const double *q, double *d) {
  enum { n = LOINK_N };
  double gram[36], x[6];
  int free[n];
  const int rows = pp->rows;
  for (int c = 0; c < n; c++) free[c] = 1;
  for (int round = 0; round < 2; round++) {
    free_gram(jac, free, rows, POSE_DAMPING_FLOOR, gram);
    for (int r = 0; r < rows; r++) {
      double s = 0.0;
      for (int k = 0; k < n; k++)
        if (free[k]) s += jac[k * 6 + r] * g[k];
      x[r] = s;
    }
    lu_solve(rows, gram, x);
    for (int c = 0; c < n; c++) {
      double s = 0.0;
      if (free[c])
        for (int r = 0; r < rows; r++) s += jac[c * 6 + r] * x[r];
      d[c] = free[c] ? -(g[c] - s) : 0.0;
    }
    int newly = 0;
    for (int c = 0; c < n; c++) {
      int blocked = (q[c] <= pp->lower[c] && d[c] < 0.0) || (q[c] >= pp->upper[c] && d[c] > 0.0);
      if (blocked && free[c]) { free[c] = 0; newly = 1; }
    }
    if (!newly) return;
  }
  for (int c = 0; c < n; c++)
    if (!free[c]) d[c] = 0.0;
}

/* Lowers the objective along the self-motion (pose_refine.descend); returns the steps kept. */
static int pose_descend(const pose_problem *pp, double *q, double *e, double *f_out) {
  enum { n = LOINK_N };
  double both[POSE_AND_JACOBIAN], g[n], d[n], trial[n], trial_e[6];
  double previous_q[n], previous_d[n], previous_e[6], previous_f = 0.0, previous_size = 0.0;
  const double *jac = both + 12;
  /* pose_refine.first_step: the seed term's curvature 2 w shortens the first step. */
  double f = objective(pp, q), alpha = POSE_FIRST_STEP / (1.0 + 2.0 * pp->weight * POSE_FIRST_STEP);
  int have_previous = 0, step;
  objective_gradient(pp, q, g);
  for (step = 0; step < POSE_DESCENT_STEPS; step++) {
    problem_pose_jacobian(q, both);
    projected_descent(pp, jac, g, q, d);
    double slope = 0.0, dd = 0.0;
    for (int i = 0; i < n; i++) { slope += g[i] * d[i]; dd += d[i] * d[i]; }
    const double size = sqrt(dd);
    if (have_previous && size <= POSE_POLISH && size >= previous_size) {   /* stalled on rounding */
      memcpy(q, previous_q, sizeof previous_q);
      memcpy(e, previous_e, sizeof previous_e);
      *f_out = previous_f;
      return step - 1;
    }
    if (size <= POSE_STATIONARY || slope >= 0.0) break;
    if (have_previous) {   /* BB1 on the projected gradient -d: the self-motion's curvature */
      double ss = 0.0, sy = 0.0;
      for (int i = 0; i < n; i++) {
        double s = q[i] - previous_q[i];
        ss += s * s; sy += s * (previous_d[i] - d[i]);
      }
      if (sy > 0.0) alpha = ss / sy;
    }
    int accepted = 0;
    double trial_f = f;
    for (int b = 0; b < POSE_BACKTRACKS; b++) {
      for (int i = 0; i < n; i++) trial[i] = q[i] + alpha * d[i];
      pose_converge(pp, trial, trial_e, POSE_RETRACT_STEPS);
      double position, rotation;
      pose_errors(trial_e, pp->rows, &position, &rotation);
      if (position <= pp->tol_position && rotation <= pp->tol_rotation) {
        trial_f = objective(pp, trial);
        if (size <= POSE_POLISH || trial_f <= f + ARMIJO * alpha * slope) { accepted = 1; break; }
      }
      alpha *= 0.5;
    }
    if (!accepted) break;
    memcpy(previous_q, q, sizeof previous_q);
    memcpy(previous_d, d, sizeof previous_d);
    memcpy(previous_e, e, sizeof previous_e);
    previous_f = f;
    previous_size = size;
    have_previous = 1;
    memcpy(q, trial, sizeof trial);
    memcpy(e, trial_e, sizeof trial_e);
    f = trial_f;
    objective_gradient(pp, q, g);
  }
  *f_out = f;
  return step;
}

/* Each angle moved by +-2 pi where that stays in the bounds and lowers the objective: the
 * same pose, a cheaper posture (pose_refine.cheapest_turns). Returns whether q moved. */
static int cheapest_turns(const pose_problem *pp, double *q, double *f) {
  int moved = 0;
  for (int c = 0; c < LOINK_N; c++)
    for (int sign = -1; revolute[c] && sign <= 1; sign += 2) {
      const double kept = q[c], turned = q[c] + sign * POSE_TWO_PI;
      if (turned < pp->lower[c] || turned > pp->upper[c]) continue;
      q[c] = turned;
      const double g = objective(pp, q);
      if (g < *f) { *f = g; moved = 1; } else q[c] = kept;
    }
  return moved;
}

/* Refines `rows` starts (rows x n, joint units) onto one pose (those on it turned to their
 * cheapest 2 pi representatives), then descends the `descents`
 * of them on the pose (within the tolerances) that are lowest in objective, ties by order,
 * each more than POSE_DESCENT_SEPARATION (largest joint) from those chosen before it
 * (pose_refine.refine_poses). `target` holds the position (3) and rotation (9, row by row);
 * `bounds` lower (n) then upper (n); `seed` (n) with `weight` adds weight ||q - seed||^2.
 * `out` receives q (rows x n), then POSE_FIELDS per row. Returns 0. */
int loink_pose_solve(int rows, const double *starts, const double *target, int position_only,
                     const double *bounds, const double *seed, double weight,
                     double tol_position, double tol_rotation, int descents, double *out) {
  enum { n = LOINK_N };
  pose_problem pp = {target, target + 3, position_only ? 3 : 6, bounds, bounds + n, seed,
                     seed ? weight : 0.0, tol_position, tol_rotation};
  double *q_out = out, *fields = out + (size_t)rows * n;
  double e[6] = {0}, both[POSE_AND_JACOBIAN];
  char descended[rows > 0 ? rows : 1];
  memset(descended, 0, sizeof descended);
  for (int r = 0; r < rows; r++) {
    double *q = q_out + r * n, *row = fields + r * POSE_FIELDS;
    memcpy(q, starts + r * n, sizeof(double) * n);
    row[POSE_NEWTON] = pose_converge(&pp, q, e, POSE_NEWTON_STEPS);
    pose_errors(e, pp.rows, &row[POSE_POSITION_ERROR], &row[POSE_ROTATION_ERROR]);
    row[POSE_OBJECTIVE] = objective(&pp, q);
    if (row[POSE_POSITION_ERROR] <= tol_position && row[POSE_ROTATION_ERROR] <= tol_rotation &&
        cheapest_turns(&pp, q, &row[POSE_OBJECTIVE])) {
      problem_pose_jacobian(q, both);
      pose_error(&pp, both, e);
      pose_errors(e, pp.rows, &row[POSE_POSITION_ERROR], &row[POSE_ROTATION_ERROR]);
    }
    row[POSE_DESCENT] = 0;
  }
  double chosen[(descents > 0 ? descents : 1) * n];
  int count = 0;
  while (count < descents) {
    int best = -1;
    for (int r = 0; r < rows; r++) {
      const double *row = fields + r * POSE_FIELDS;
      if (descended[r] || row[POSE_POSITION_ERROR] > tol_position ||
          row[POSE_ROTATION_ERROR] > tol_rotation)
        continue;
      if (best < 0 || row[POSE_OBJECTIVE] < fields[best * POSE_FIELDS + POSE_OBJECTIVE]) best = r;
    }
    if (best < 0) break;
    double *q = q_out + best * n, *row = fields + best * POSE_FIELDS, f;
    descended[best] = 1;
    int near = 0;
    for (int k = 0; k < count && !near; k++) {
      double largest = 0.0;
      for (int i = 0; i < n; i++) largest = fmax(largest, fabs(q[i] - chosen[k * n + i]));
      near = largest <= POSE_DESCENT_SEPARATION;
    }
    if (near) continue;
    memcpy(chosen + count++ * n, q, sizeof(double) * n);
    problem_pose_jacobian(q, both);
    pose_error(&pp, both, e);
    row[POSE_DESCENT] = pose_descend(&pp, q, e, &f);
    row[POSE_OBJECTIVE] = f;
    pose_errors(e, pp.rows, &row[POSE_POSITION_ERROR], &row[POSE_ROTATION_ERROR]);
  }
  return 0;
}
