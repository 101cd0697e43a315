/* Planning a whole Cartesian path at once (runtime/cartesian_path.py, which says why): a beam
 * of configurations carried along the poses, each continued by Gauss-Newton inside its box and
 * explored along its self-motion, kept half by value and half by farthest-point sampling, and
 * the lowest-value sequence traced back. Included by kernel.c after continuation.c. */

/* A unit direction of the self-motion at q: the column of largest norm of the projector
 * I - J+ J on the pose Jacobian's null space (its only direction for a 7-joint arm's pose). */
static void null_direction(const double *q, int rows, double *null) {
  enum { n = LOINK_N };
  double both[POSE_AND_JACOBIAN], gram[36], x[6], projector[n * n];
  int all[n];
  for (int i = 0; i < n; i++) all[i] = 1;
  problem_pose_jacobian(q, both);
  const double *jac = both + 12;
  for (int c = 0; c < n; c++) {   /* column c of J+ J = J^T (J J^T)^-1 J e_c */
    free_gram(jac, all, rows, POSE_DAMPING_FLOOR, gram);
    for (int r = 0; r < rows; r++) x[r] = jac[c * 6 + r];
    lu_solve(rows, gram, x);
    for (int i = 0; i < n; i++) {
      double s = 0.0;
      for (int r = 0; r < rows; r++) s += jac[i * 6 + r] * x[r];
      projector[i * n + c] = (i == c ? 1.0 : 0.0) - s;
    }
  }
  int best = 0;
  double best_norm = -1.0;
  for (int c = 0; c < n; c++) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += projector[i * n + c] * projector[i * n + c];
    if (s > best_norm) { best_norm = s; best = c; }
  }
  const double norm = sqrt(fmax(best_norm, 1e-300));
  for (int i = 0; i < n; i++) null[i] = projector[i * n + best] / norm;
}

/* Each joint's box half-width from q (on pose k - 1) to pose k (CartesianPlanner._reach). */
static void plan_reach(const loink_pose_settings *s, const loink_plan_request *req, int k,
                       const double *q, double *reach) {
  enum { n = LOINK_N };
  if (req->times) {
    const double dt = req->times[k] - req->times[k - 1];
    for (int i = 0; i < n; i++) reach[i] = req->velocity[i] * dt;
    return;
  }
  double both[POSE_AND_JACOBIAN], e[6], position, rotation;
  const double *target = req->poses + 12 * k;
  pose_problem pp = {target, target + 3, req->position_only ? 3 : 6, NULL, NULL, NULL, 0.0,
                     0.0, 0.0, 0.0};
  problem_pose_jacobian(q, both);
  pose_error(&pp, both, e);
  pose_errors(e, pp.rows, &position, &rotation);
  const double box = fmin(floor((s->continuation_reach[0] + s->continuation_reach[1] * position +
                                 s->continuation_reach[2] * rotation) * REACH_GRID) / REACH_GRID,
                          REACH_CAP);
  for (int i = 0; i < n; i++) reach[i] = req->jump ? fmin(box, req->jump[i]) : box;
}

/* An untimed path's values are integrals along the path: pose k's cost and its step's
 * smoothing are weighed by the pose step from k - 1 (rotations at MoveIt's 3.5 rad per m) over
 * PLAN_STEP, so that a denser path of the same poses gets the same plan
 * (cartesian_path._step_share). A timed one's are sums over its (even) time steps: 1. */
#define PLAN_STEP 0.01
#define PLAN_ROTATION_STEP 3.5
#define PLAN_SHARE_FLOOR 1e-6

static double step_share(const loink_plan_request *req, int k) {
  if (req->times) return 1.0;
  const double *a = req->poses + 12 * (k - 1), *b = req->poses + 12 * k;
  double position = 0.0, rotation = 0.0, m[9];
  for (int i = 0; i < 3; i++) position += (b[i] - a[i]) * (b[i] - a[i]);
  if (!req->position_only) {   /* the angle of R_b R_a^T */
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        m[i * 3 + j] = b[3 + i * 3] * a[3 + j * 3] + b[4 + i * 3] * a[4 + j * 3] + b[5 + i * 3] * a[5 + j * 3];
    const double s0 = 0.5 * (m[7] - m[5]), s1 = 0.5 * (m[2] - m[6]), s2 = 0.5 * (m[3] - m[1]);
    rotation = atan2(sqrt(s0 * s0 + s1 * s1 + s2 * s2), 0.5 * (m[0] + m[4] + m[8] - 1.0));
  }
  return fmax(fmax(sqrt(position), rotation / PLAN_ROTATION_STEP) / PLAN_STEP, PLAN_SHARE_FLOOR);
}

static double largest_difference(const double *a, const double *b) {
  double d = 0.0;
  for (int i = 0; i < LOINK_N; i++) d = fmax(d, fabs(a[i] - b[i]));
  return d;
}

/* Up to how->beam of the `count` candidates (q, value): how->value_share the lowest in value,
 * each more than how->separation from those kept before, then farthest-point sampling.
 * Writes their indices into `kept`; returns how many. (cartesian_path._diverse) */
static int diverse(const loink_plan_settings *how, int count, const double *q,
                   const double *value, int *kept, double *distance, int *order) {
  enum { n = LOINK_N };
  for (int r = 0; r < count; r++) {   /* stable insertion sort by value */
    int j = r;
    while (j > 0 && value[order[j - 1]] > value[r]) { order[j] = order[j - 1]; j--; }
    order[j] = r;
  }
  int found = 0;
  for (int k = 0; k < count && found < how->value_share && found < how->beam; k++) {
    const int i = order[k];
    int apart = 1;
    for (int j = 0; j < found && apart; j++)
      apart = largest_difference(q + i * n, q + kept[j] * n) > how->separation;
    if (apart) kept[found++] = i;
  }
  for (int i = 0; i < count; i++) {
    distance[i] = INFINITY;
    for (int j = 0; j < found; j++)
      distance[i] = fmin(distance[i], largest_difference(q + i * n, q + kept[j] * n));
  }
  while (found < how->beam) {
    int far = 0;
    for (int i = 1; i < count; i++)
      if (distance[i] > distance[far]) far = i;
    if (!(distance[far] > how->separation)) break;
    kept[found++] = far;
    for (int i = 0; i < count; i++)
      distance[i] = fmin(distance[i], largest_difference(q + i * n, q + far * n));
  }
  return found;
}

int loink_plan_fields(void) { return LOINK_PLAN_FIELDS; }

int loink_plan_path(const loink_pose_settings *s, const loink_plan_settings *how,
                    const loink_plan_request *req, loink_accept accept, void *context,
                    double *work, int *links, double *q_out, double *info) {
  enum { n = LOINK_N };
  const int beam = how->beam, starts = 1 + 2 * how->explore_count;
  const int most = beam * starts;
  if (beam < 1 || req->first_count < 1 || req->first_count > beam || req->count < 1) return -1;
  /* Layer k's beam: work + k * beam * (n + 2) holds q (beam x n), value (beam), on (beam);
   * links + k * (beam + 1): parent of each, then the layer's size. */
  const int stride = beam * (n + 2);
  double cand[most * n], cand_value[most], cand_on[most], distance[most], rows[starts * (n + POSE_FIELDS)];
  int cand_parent[most], order[most], kept[beam];
  double *layer = work;
  int *link = links;
  memcpy(layer, req->first, sizeof(double) * req->first_count * n);
  for (int b = 0; b < req->first_count; b++) {
    layer[beam * n + b] = req->first_value[b];
    layer[beam * (n + 1) + b] = 1.0;
    link[b] = -1;
  }
  link[beam] = req->first_count;
  int planned = 1;
  for (int k = 1; k < req->count; k++) {
    const double *previous = work + (size_t)(k - 1) * stride;
    const int size = links[(size_t)(k - 1) * (beam + 1) + beam];
    const double *target = req->poses + 12 * k;
    const double along = step_share(req, k);   /* this step's weight */
    int count = 0;
    for (int p = 0; p < size; p++) {
      const double *q = previous + p * n;
      double reach[n], bounds[2 * n], null[n], step = INFINITY, start[starts * n];
      plan_reach(s, req, k, q, reach);
      null_direction(q, req->position_only ? 3 : 6, null);
      for (int i = 0; i < n; i++) {
        bounds[i] = fmax(req->lower[i], q[i] - reach[i]);
        bounds[n + i] = fmin(req->upper[i], q[i] + reach[i]);
        step = fmin(step, reach[i] / fmax(fabs(null[i]), 1e-12));
      }
      for (int r = 0; r < starts; r++) {   /* q, then +share, -share for each share */
        const double share = r == 0 ? 0.0 : (r % 2 ? 1.0 : -1.0) * how->explore_shares[(r - 1) / 2];
        for (int i = 0; i < n; i++) start[r * n + i] = q[i] + share * step * null[i];
      }
      loink_pose_solve(starts, start, target, req->position_only, bounds, NULL, 0.0,
                       how->exact_position, how->exact_rotation, 0, rows);
      const double *fields = rows + starts * n;
      for (int r = 0; r < starts; r++) {
        const double *q_new = rows + r * n, *f = fields + r * POSE_FIELDS;
        if (accept && accept(context, q_new) != 0) continue;
        const double position = f[POSE_POSITION_ERROR], rotation = f[POSE_ROTATION_ERROR];
        const int on = position <= how->exact_position && rotation <= how->exact_rotation;
        double move = 0.0;
        for (int i = 0; i < n; i++) move += (q_new[i] - q[i]) * (q_new[i] - q[i]);
        memcpy(cand + count * n, q_new, sizeof(double) * n);
        cand_value[count] = previous[beam * n + p] + how->smoothing * move / along + along * true_cost(q_new) +
                            (on ? 0.0 : how->lag * (1.0 + 1e3 * position + 1e2 * rotation));
        cand_on[count] = on;
        cand_parent[count++] = p;
      }
    }
    int any_on = 0;
    for (int c = 0; c < count; c++) any_on |= cand_on[c] != 0.0;
    if (count == 0 || (!any_on && !req->times)) break;   /* untimed: no jump, so stop here */
    int pool = 0;   /* the on-target candidates where there are any */
    for (int c = 0; c < count; c++)
      if (cand_on[c] != 0.0 || !any_on) {
        memmove(cand + pool * n, cand + c * n, sizeof(double) * n);
        cand_value[pool] = cand_value[c];
        cand_on[pool] = cand_on[c];
        cand_parent[pool++] = cand_parent[c];
      }
    const int found = diverse(how, pool, cand, cand_value, kept, distance, order);
    layer = work + (size_t)k * stride;
    link = links + (size_t)k * (beam + 1);
    for (int b = 0; b < found; b++) {
      memcpy(layer + b * n, cand + kept[b] * n, sizeof(double) * n);
      layer[beam * n + b] = cand_value[kept[b]];
      layer[beam * (n + 1) + b] = cand_on[kept[b]];
      link[b] = cand_parent[kept[b]];
    }
    link[beam] = found;
    planned = k + 1;
  }
  /* The lowest value of the last layer, traced back. */
  const double *last = work + (size_t)(planned - 1) * stride;
  const int size = links[(size_t)(planned - 1) * (beam + 1) + beam];
  int index = 0;
  for (int b = 1; b < size; b++)
    if (last[beam * n + b] < last[beam * n + index]) index = b;
  for (int k = planned - 1; k >= 0; k--) {
    const double *here = work + (size_t)k * stride;
    memcpy(q_out + (size_t)k * n, here + index * n, sizeof(double) * n);
    info[k * LOINK_PLAN_FIELDS + LOINK_PLAN_ON_TARGET] = here[beam * (n + 1) + index];
    info[k * LOINK_PLAN_FIELDS + LOINK_PLAN_COST] = true_cost(here + index * n);
    index = links[(size_t)k * (beam + 1) + index];
  }
  return planned;
}
