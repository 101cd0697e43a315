/* The task map of a problem whose forward model is an equilibrium (symbolic.ImplicitTask: the
 * HSA robot's statics): included by kernel.c after lu_solve and clip, it defines problem_task,
 * problem_jacobian and problem_closed_form from the generated residual, pose and program
 * (problem_functions.h), as problems/hsa/statics.py and problem.py compute them in numpy, step
 * for step. */
#include <pthread.h>

enum { IMPLICIT_N = LOINK_N, IMPLICIT_P = LOINK_P, IMPLICIT_K = LOINK_STATE };
#define IMPLICIT_HALVINGS 20
#define IMPLICIT_ARMIJO 1e-4
#define IMPLICIT_RIDGE 1e-18

static const double implicit_start[IMPLICIT_K] = LOINK_STATE_START;
static const double implicit_lower[IMPLICIT_N] = LOINK_PROGRAM_LOWER;
static const double implicit_upper[IMPLICIT_N] = LOINK_PROGRAM_UPPER;

static double norm2(int m, const double *v) {
  double s = 0.0;
  for (int i = 0; i < m; i++) s += v[i] * v[i];
  return sqrt(s);
}

/* Column-major k x k (CasADi's dense layout) to row-major, for lu_solve. */
static void row_major(int k, const double *col, double *row) {
  for (int r = 0; r < k; r++)
    for (int c = 0; c < k; c++) row[r * k + c] = col[c * k + r];
}

/* The state s at rest for q: Newton from the start, backtracking on ||residual|| (each trial
 * evaluated with its Jacobian, reused when accepted), as HsaStatics.steady_state; returns 1
 * when ||residual|| <= LOINK_STATE_TOLERANCE. */
static int steady_state(const double *q, double *s) {
  enum { k = IMPLICIT_K, n = IMPLICIT_N };
  double r[k], rs[k * k], r_t[k], rs_t[k * k], step[k], a[k * k];
  memcpy(s, implicit_start, sizeof implicit_start);
  problem_residual(s, q, r, rs);
  double norm = norm2(k, r);
  for (int it = 0; it < LOINK_STATE_STEPS; it++) {
    if (!(norm > LOINK_STATE_TOLERANCE)) break;
    row_major(k, rs, a);
    for (int i = 0; i < k; i++) step[i] = -r[i];
    if (lu_solve(k, a, step)) break;
    double scale = 1.0, norm_t = norm, trial[k];
    for (int h = 0; h < IMPLICIT_HALVINGS; h++) {
      for (int i = 0; i < k; i++) trial[i] = s[i] + scale * step[i];
      problem_residual(trial, q, r_t, rs_t);
      norm_t = norm2(k, r_t);
      if (!(norm_t > (1.0 - IMPLICIT_ARMIJO * scale) * norm)) break;
      scale /= 2.0;
    }
    for (int i = 0; i < k; i++) s[i] += scale * step[i];
    memcpy(r, r_t, sizeof r);
    memcpy(rs, rs_t, sizeof rs);
    norm = norm_t;
  }
  return norm <= LOINK_STATE_TOLERANCE;
}

void problem_task(const double *q, double *out) {
  double s[IMPLICIT_K], pose_s[IMPLICIT_P * IMPLICIT_K];
  if (!steady_state(q, s)) {
    for (int i = 0; i < IMPLICIT_P; i++) out[i] = NAN;
    return;
  }
  problem_state_pose(s, out, pose_s);
}

/* d task / d q = -d pose/ds (dr/ds)^-1 dr/dq at rest (column-major p x n), as
 * HsaProblem.task_jacobian. */
void problem_jacobian(const double *q, double *out) {
  enum { k = IMPLICIT_K, n = IMPLICIT_N, p = IMPLICIT_P };
  double s[k], r[k], rs[k * k], rq[k * n], pose[p], pose_s[p * k], a[k * k], column[k];
  steady_state(q, s);
  problem_residual(s, q, r, rs);
  problem_residual_q(s, q, rq);
  problem_state_pose(s, pose, pose_s);
  for (int c = 0; c < n; c++) {
    row_major(k, rs, a);
    memcpy(column, rq + c * k, sizeof column);
    if (lu_solve(k, a, column))
      for (int i = 0; i < k; i++) column[i] = NAN;
    for (int i = 0; i < p; i++) {
      double v = 0.0;
      for (int j = 0; j < k; j++) v += pose_s[j * p + i] * column[j];
      out[c * p + i] = -v;
    }
  }
}

/* The generated program keeps its workspace in a static pool of
 * CASADI_MAX_NUM_THREADS slots; checking one out and back in is not thread-safe by itself. */
static pthread_mutex_t program_pool = PTHREAD_MUTEX_INITIALIZER;

/* The program from [q; s(q)] (HsaLeastEffort.solve): its q, clipped; 0 when it ran. */
static int run_program(const double *q, const double *y, double *out) {
  enum { k = IMPLICIT_K, n = IMPLICIT_N };
  double x0[n + k], lbx[n + k], ubx[n + k], x[n + k];
  memcpy(x0, q, sizeof(double) * n);
  clip(n, implicit_lower, implicit_upper, x0);
  steady_state(x0, x0 + n);
  for (int i = 0; i < n + k; i++) {
    lbx[i] = i < n ? implicit_lower[i] : -INFINITY;
    ubx[i] = i < n ? implicit_upper[i] : INFINITY;
  }
  pthread_mutex_lock(&program_pool);
  int mem = LOINK_PROGRAM_CHECKOUT();
  pthread_mutex_unlock(&program_pool);
  if (mem < 0) return -1;
  /* The constraints are equalities (lbg = ubg = 0); no multipliers to start from (NULL). */
  static const double zeros[LOINK_PROGRAM_CONSTRAINTS];
  const double *arg[LOINK_PROGRAM_SZ_ARG] = {x0, y, lbx, ubx, zeros, zeros};
  double *res[LOINK_PROGRAM_SZ_RES] = {x};
  long long int iw[LOINK_PROGRAM_SZ_IW + 1];
  double w[LOINK_PROGRAM_SZ_W + 1];
  int status = LOINK_PROGRAM(arg, res, iw, w, mem);
  pthread_mutex_lock(&program_pool);
  LOINK_PROGRAM_RELEASE(mem);
  pthread_mutex_unlock(&program_pool);
  (void)status;   /* as in numpy: an unfinished program is judged by its answer's error */
  memcpy(out, x, sizeof(double) * n);
  clip(n, implicit_lower, implicit_upper, out);
  return 0;
}

/* The least change of q onto the task y by Gauss-Newton over q and s, joints at a bound that
 * the step pushes out held there (HsaStatics.project). */
static void project(const double *q, const double *y, double *phi) {
  enum { k = IMPLICIT_K, n = IMPLICIT_N, p = IMPLICIT_P, m = IMPLICIT_K + IMPLICIT_P,
         v = IMPLICIT_N + IMPLICIT_K };
  double s[k], r[k], rs[k * k], rq[k * n], pose[p], pose_s[p * k];
  double jac[m * v], res[m], free[v], gram[m * m], step[v];
  memcpy(phi, q, sizeof(double) * n);
  clip(n, implicit_lower, implicit_upper, phi);
  steady_state(phi, s);
  for (int it = 0; it < LOINK_PROJECTION_STEPS; it++) {
    problem_residual(s, phi, r, rs);
    problem_residual_q(s, phi, rq);
    problem_state_pose(s, pose, pose_s);
    double largest = 0.0;
    for (int i = 0; i < m; i++) {
      res[i] = i < k ? r[i] : pose[i - k] - y[i - k];
      double a = fabs(res[i]);
      if (a > largest || isnan(a)) largest = a;
    }
    if (largest <= LOINK_PROJECTION_TOLERANCE) break;
    for (int i = 0; i < m; i++)          /* [[dr/dq, dr/ds], [0, dpose/ds]], row-major */
      for (int c = 0; c < v; c++)
        jac[i * v + c] = i < k ? (c < n ? rq[c * k + i] : rs[(c - n) * k + i])
                               : (c < n ? 0.0 : pose_s[(c - n) * p + (i - k)]);
    for (int c = 0; c < v; c++) {
      free[c] = c < n ? 1.0 : LOINK_STATE_WEIGHT;
      if (c >= n) continue;
      double push = 0.0;
      for (int i = 0; i < m; i++) push -= jac[i * v + c] * res[i];
      if ((phi[c] <= implicit_lower[c] && push < 0.0) || (phi[c] >= implicit_upper[c] && push > 0.0))
        free[c] = 0.0;
    }
    for (int i = 0; i < m; i++)
      for (int j = 0; j < m; j++) {
        double g = i == j ? IMPLICIT_RIDGE : 0.0;
        for (int c = 0; c < v; c++) g += jac[i * v + c] * free[c] * jac[j * v + c];
        gram[i * m + j] = g;
      }
    if (lu_solve(m, gram, res)) break;
    double biggest = 0.0;
    for (int c = 0; c < v; c++) {
      double t = 0.0;
      for (int i = 0; i < m; i++) t += jac[i * v + c] * free[c] * res[i];
      step[c] = -t;
      if (c < n && fabs(step[c]) > biggest) biggest = fabs(step[c]);
    }
    double scale = LOINK_PROJECTION_MAX_STEP / (biggest > 1e-300 ? biggest : 1e-300);
    if (!(scale < 1.0)) scale = 1.0;
    for (int c = 0; c < v; c++) step[c] *= scale;
    for (int c = 0; c < n; c++) phi[c] += step[c];
    clip(n, implicit_lower, implicit_upper, phi);
    for (int c = 0; c < k; c++) s[c] += step[n + c];
  }
}

/* HsaProblem.closed_form_refine: the program's answer where every task row is within
 * LOINK_PROGRAM_EXACT of y, else the projection of q onto the task. */
void problem_closed_form(const double *q, const double *y, double *out) {
  if (run_program(q, y, out) == 0) {
    double t[IMPLICIT_P];
    problem_task(out, t);
    int exact = 1;
    for (int i = 0; i < IMPLICIT_P; i++) exact &= fabs(t[i] - y[i]) <= LOINK_PROGRAM_EXACT;
    if (exact) return;
  }
  project(q, y, out);
}
