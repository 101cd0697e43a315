/* The ranked full-pose solve (runtime/pose_solver.py, step for step): the starts (the
 * network's answers, the prior's draws, restarts), each refined onto the pose, the valid
 * answers ranked by objective. Included by kernel.c after pose_newton.c. */
int loink_ranked_fields(void) { return LOINK_RANKED_FIELDS; }

/* splitmix64 (runtime/splitmix.py): the starts' draws, the same in C and numpy. */
typedef struct { uint64_t state; } splitmix;

static uint64_t splitmix_next(splitmix *g) {
  uint64_t z = (g->state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static double splitmix_uniform(splitmix *g) {
  return (double)(splitmix_next(g) >> 11) * 0x1.0p-53;
}

/* Box-Muller, one normal per two uniforms. */
static double splitmix_normal(splitmix *g) {
  double u1 = splitmix_uniform(g), u2 = splitmix_uniform(g);
  return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * 3.141592653589793 * u2);
}

/* Streams: the prior's draws of attempt k, then its restarts. */
static splitmix prior_stream(int attempt) { splitmix g = {2u * (uint64_t)attempt}; return g; }
static splitmix restart_stream(int attempt) { splitmix g = {2u * (uint64_t)attempt + 1u}; return g; }

static double monotonic_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
  const loink_pose_request *req;
  loink_accept accept;
  void *context;
  int count, found, have_best, tried;
  double *q_out, *info;                 /* found answers, then (if none) the best */
  double best_q[LOINK_N], best_info[LOINK_RANKED_FIELDS];
} ranked_state;

static int near_found(const ranked_state *st, const double *q, double distinct) {
  for (int k = 0; k < st->found; k++) {
    double largest = 0.0;
    for (int i = 0; i < LOINK_N; i++) largest = fmax(largest, fabs(q[i] - st->q_out[k * LOINK_N + i]));
    if (largest <= distinct) return 1;
  }
  return 0;
}

/* Every start onto the pose, the lowest in objective descended; then the valid answers in
 * order of objective (exact poses first) (PoseSolver._collect). */
static void collect(const loink_pose_settings *s, ranked_state *st, int rows,
                    const double *starts, const int *sources) {
  enum { n = LOINK_N };
  const loink_pose_request *req = st->req;
  double bounds[2 * n], out[(rows > 0 ? rows : 1) * (n + POSE_FIELDS)], key[rows > 0 ? rows : 1];
  int order[rows > 0 ? rows : 1];
  if (rows <= 0) return;
  memcpy(bounds, req->lower, sizeof(double) * n);
  memcpy(bounds + n, req->upper, sizeof(double) * n);
  loink_pose_solve(rows, starts, req->target, req->position_only, bounds, req->seed,
                   req->seed_weight, s->exact_position, s->exact_rotation, s->descents, out);
  st->tried += rows;
  const double *fields = out + (size_t)rows * n;
  for (int r = 0; r < rows; r++) {   /* stable insertion sort by key */
    const double *f = fields + r * POSE_FIELDS;
    int exact = f[POSE_POSITION_ERROR] <= s->exact_position && f[POSE_ROTATION_ERROR] <= s->exact_rotation;
    key[r] = exact ? f[POSE_OBJECTIVE] : INFINITY;
    int j = r;
    while (j > 0 && key[order[j - 1]] > key[r]) { order[j] = order[j - 1]; j--; }
    order[j] = r;
  }
  for (int k = 0; k < rows; k++) {
    int r = order[k];
    const double *q = out + r * n, *f = fields + r * POSE_FIELDS;
    if (near_found(st, q, s->distinct)) continue;
    double position = f[POSE_POSITION_ERROR], rotation = f[POSE_ROTATION_ERROR];
    int within = position <= req->tol_position && rotation <= req->tol_rotation;
    /* The caller's check may be slow (a collision check): past the deadline, no more start
     * once one has run (the answer so far stays the best one checked). */
    if (within && st->accept != NULL && (st->found > 0 || st->have_best) && req->deadline > 0.0 &&
        monotonic_now() >= req->deadline)
      return;
    int valid = within && (st->accept == NULL || st->accept(st->context, q) == 0);
    double row[LOINK_RANKED_FIELDS] = {position, rotation, f[POSE_OBJECTIVE], true_cost(q),
                                       sources[r]};
    if (valid) {
      memcpy(st->q_out + st->found * n, q, sizeof(double) * n);
      memcpy(st->info + st->found * LOINK_RANKED_FIELDS, row, sizeof row);
      if (++st->found == st->count) return;
    } else if (!st->have_best || (st->best_info[LOINK_RANKED_SOURCE] != LOINK_SOURCE_CONTINUATION &&
                                  position + rotation < st->best_info[0] + st->best_info[1])) {
      /* a failed continuation's own attempt stays the answer */
      memcpy(st->best_q, q, sizeof st->best_q);
      memcpy(st->best_info, row, sizeof row);
      st->have_best = 1;
    }
  }
}

/* Whether the request is a continuation (PoseSolver._continued); if so, its answer is the
 * first found where it is valid and the caller accepts it, else the closest answer so far, and
 * `box` (lower n, upper n) receives the request's bounds within the reach of the seed, where
 * its other answers must lie: an answer farther would be a jump. */
static int continue_from_seed(const loink_pose_settings *s, const network *net, ranked_state *st,
                              double *box) {
  enum { n = LOINK_N };
  const loink_pose_request *req = st->req;
  double from[n], reach[n], q[n], info[CONTINUE_FIELDS];
  for (int i = 0; i < n; i++)   /* farther outside the limits and the bounds: no state of the arm */
    if (req->seed[i] < fmin(net->lower[i], req->lower[i]) - SEED_MARGIN ||
        req->seed[i] > fmax(net->upper[i], req->upper[i]) + SEED_MARGIN) return 0;
  memcpy(from, req->seed, sizeof from);
  clip(n, req->lower, req->upper, from);
  if (!continuation_reach(s, req->target, req->position_only, from, req->approximate, reach)) return 0;
  for (int i = 0; i < n; i++) {
    box[i] = fmax(req->lower[i], from[i] - reach[i]);
    box[n + i] = fmin(req->upper[i], from[i] + reach[i]);
  }
  st->tried += 1;
  const loink_continue_settings how = {0.0, s->drift_share, s->velocity, s->singular_margin,
                                       s->exact_position, s->exact_rotation};
  const int on_pose = loink_pose_continue(req->target, req->position_only, from, reach, req->lower,
                                          req->upper, &how, q, info);
  const double position = info[CONTINUE_POSITION_ERROR], rotation = info[CONTINUE_ROTATION_ERROR];
  const double cost = true_cost(q);
  double row[LOINK_RANKED_FIELDS] = {position, rotation, cost, cost, LOINK_SOURCE_CONTINUATION};
  if (on_pose && position <= req->tol_position && rotation <= req->tol_rotation &&
      (st->accept == NULL || st->accept(st->context, q) == 0)) {
    memcpy(st->q_out, q, sizeof q);
    memcpy(st->info, row, sizeof row);
    st->found = 1;
  } else {
    memcpy(st->best_q, q, sizeof q);
    memcpy(st->best_info, row, sizeof row);
    st->have_best = 1;
  }
  return 1;
}

/* The first batch's starts (PoseSolver._starts): the network's answers (attempt 0, where
 * they serve), the seed (attempt 0, seed-consistent), the prior's draws; clipped to the
 * request's bounds. Returns the rows written. */
static int first_starts(const int *ints, const double *reals, const network *net,
                        const loink_pose_settings *s, const loink_pose_request *req,
                        double weight, double *starts, int *sources) {
  enum { n = LOINK_N, p = LOINK_P };
  int rows = 0;
  const double share = weight / (1.0 + weight);
  if (req->attempt == 0 && s->latent_count > 0 && (req->position_only || s->network_for_poses)) {
    const int L = s->latent_count;
    double in[L * n], out[L * (n + INFO_FIELDS) + net->depth * (L * n + 1)], seed_z[n - p > 0 ? n - p : 1];
    if (weight > 0.0) {
      double q[n], w[n];
      memcpy(q, req->seed, sizeof q);
      clip(n, net->lower, net->upper, q);
      loink_forward(ints, reals, 1, q, w, NULL);
      for (int i = 0; i < n - p; i++) seed_z[i] = share * w[p + i];
    }
    for (int r = 0; r < L; r++) {
      for (int i = 0; i < p; i++) {
        double v = req->target[s->task_rows[i]];
        in[r * p + i] = fmin(fmax(v, s->task_lower[i]), s->task_upper[i]);
      }
      for (int i = 0; i < n - p; i++)
        in[L * p + r * (n - p) + i] = s->latents[r * (n - p) + i] + (weight > 0.0 ? seed_z[i] : 0.0);
    }
    loink_solve(ints, reals, L, in, NULL, s->inverse_tol, s->inverse_max_iter, 0, out);
    memcpy(starts, out, sizeof(double) * L * n);
    for (int r = 0; r < L; r++) sources[r] = r == 0 ? LOINK_SOURCE_OPTIMUM : LOINK_SOURCE_LATENT;
    rows = L;
  }
  if (req->attempt == 0 && weight > 0.0) {
    memcpy(starts + rows * n, req->seed, sizeof(double) * n);
    sources[rows++] = LOINK_SOURCE_SEED;
  }
  splitmix g = prior_stream(req->attempt);
  double centre[n];
  if (s->centre)
    for (int i = 0; i < n; i++)
      centre[i] = weight > 0.0 ? s->centre[i] + share * (req->seed[i] - s->centre[i]) : s->centre[i];
  for (int r = 0; r < s->prior_count; r++, rows++) {
    for (int i = 0; i < n; i++)
      starts[rows * n + i] = s->centre ? centre[i] + s->spread[i] * splitmix_normal(&g)
                                       : net->lower[i] + splitmix_uniform(&g) * (net->upper[i] - net->lower[i]);
    sources[rows] = LOINK_SOURCE_PRIOR;
  }
  for (int r = 0; r < rows; r++) clip(n, req->lower, req->upper, starts + r * n);
  return rows;
}

int loink_pose_ranked(const int *ints, const double *reals, const loink_pose_settings *s,
                      const loink_pose_request *req, loink_accept accept, void *context,
                      double *q_out, double *info, int *tried) {
  enum { n = LOINK_N };
  network net;
  if (unpack(ints, reals, &net) || req->count < 1) return -1;
  const double weight = req->seed ? req->seed_weight : 0.0;
  const int first = s->latent_count + 1 + s->prior_count;
  const int batch = first > s->restarts ? first : s->restarts;
  double starts[batch * n];
  int sources[batch];
  ranked_state st = {req, accept, context, req->count, 0, 0, 0, q_out, info, {0}, {0}};
  double box[2 * n];
  loink_pose_request within;
  int rounds = s->max_rounds;
  int searched = 1;
  if (req->seed && weight == 0.0 && continue_from_seed(s, &net, &st, box) && st.found == 0) {
    within = *req;   /* no continuation: the search, within the seed's reach alone */
    within.lower = box;
    within.upper = box + n;
    req = st.req = &within;
    rounds = req->approximate ? 0 : s->continuation_rounds;
    searched = !req->approximate;   /* approximate: the continuation's attempt at once */
  }
  if (searched && st.found < st.count)
    collect(s, &st, first_starts(ints, reals, &net, s, req, weight, starts, sources), starts, sources);
  splitmix g = restart_stream(req->attempt);
  for (int round = 0; round < rounds && st.found == 0; round++) {
    if (req->deadline > 0.0 && monotonic_now() >= req->deadline) break;
    for (int r = 0; r < s->restarts; r++) {
      for (int i = 0; i < n; i++)
        starts[r * n + i] = req->lower[i] + splitmix_uniform(&g) * (req->upper[i] - req->lower[i]);
      sources[r] = LOINK_SOURCE_RESTART;
    }
    collect(s, &st, s->restarts, starts, sources);
  }
  *tried = st.tried;
  if (st.found == 0) {
    memcpy(q_out, st.best_q, sizeof st.best_q);
    memcpy(info, st.best_info, sizeof st.best_info);
  }
  return st.found;
}
