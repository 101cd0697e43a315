/* The LOInK runtime solve in C: the same algorithm as the numpy reference
 * (runtime/newton_inverse.py, network_inverse.py, cost_head_map.py, refine.py, solver.py),
 * row by row, with the problem's kinematics from CasADi-generated functions
 * (problem_functions.h and .c, written by compiled/codegen.py). No global state: every buffer is
 * the caller's or on the stack, so calls from many threads run at once (ctypes releases
 * the GIL around them). docs/COMPILED.md describes the layout of `ints` and `reals`. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "problem_functions.h"

#define MAX_DEPTH 16
#define MAX_BLOCKS 32
#define MAX_HEAD 8
#define MAX_WIDTH 1024             /* widest cost-head layer */
#define WIDE_ROWS 8                /* joints from which jacobian() adds rows column-wise */
#define ARMIJO 1e-4
#define MAX_HALVINGS 30
#define EXACT_TOL 1e-9
#define REFINE_TOL 1e-10
#define REFINE_MAX_ITER 20
#define REFINE_DAMPING 1e-6
#define REFINE_START_GRID 16777216.0   /* 1 / refine.START_GRID = 2^24 */
#define LN2 0.693147180559945309417232121458176568

typedef struct {
  int N, blocks;
  const int *start;                  /* blocks + 1 hidden-unit offsets */
  double mu, gamma;
  const double *w_in, *b, *w_out, *b_y, *S, *origin_out, *origin_inv_t;
  const double *V[MAX_BLOCKS];       /* V[l]: (units of block l) x (units of block l-1) */
  const double *VT[MAX_BLOCKS];      /* V[l]^T, for products along the other axis */
} monotone;

typedef struct { const double *R, *b; } orthogonal;

typedef struct { int in, out; const double *WT, *b; } dense;   /* WT: in x out */

typedef struct {
  int n, p, depth, head_layers, max_N;
  const double *x_lower, *x_upper, *y_mean, *y_std, *lower, *upper;
  double cost_mean, cost_std;
  double inside_lower[LOINK_N], inside_upper[LOINK_N];   /* the limits in network units */
  orthogonal orth[MAX_DEPTH + 1];
  monotone mono[MAX_DEPTH];
  dense head[MAX_HEAD];
} network;

/* Reads the packed model (docs/COMPILED.md); returns 0, or -1 if it does not fit the limits. */
static int unpack(const int *ints, const double *reals, network *net) {
  int n = ints[0], p = ints[1], depth = ints[2], head = ints[3];
  const int *ip = ints + 4;
  const double *rp = reals;
  if (depth > MAX_DEPTH || head > MAX_HEAD || n != LOINK_N || p != LOINK_P || p > MAX_WIDTH)
    return -1;
  net->n = n; net->p = p; net->depth = depth; net->head_layers = head; net->max_N = 0;
  net->x_lower = rp; rp += n; net->x_upper = rp; rp += n;
  net->y_mean = rp; rp += p; net->y_std = rp; rp += p;
  net->cost_mean = *rp++; net->cost_std = *rp++;
  net->lower = rp; rp += n; net->upper = rp; rp += n;
  for (int i = 0; i < n; i++) {    /* Normalization.x_to_net */
    double range = net->x_upper[i] - net->x_lower[i];
    net->inside_lower[i] = 2.0 * (net->lower[i] - net->x_lower[i]) / range - 1.0;
    net->inside_upper[i] = 2.0 * (net->upper[i] - net->x_lower[i]) / range - 1.0;
  }
  for (int k = 0; k <= depth; k++) {
    net->orth[k].R = rp; rp += n * n;
    net->orth[k].b = rp; rp += n;
  }
  for (int k = 0; k < depth; k++) {
    monotone *m = &net->mono[k];
    m->N = *ip++; m->blocks = *ip++; m->start = ip; ip += m->blocks + 1;
    if (m->blocks > MAX_BLOCKS) return -1;
    if (m->N > net->max_N) net->max_N = m->N;
    m->mu = *rp++; m->gamma = *rp++;
    m->w_in = rp; rp += n * m->N;
    m->b = rp; rp += m->N;
    for (int l = 1; l < m->blocks; l++) {
      int size = (m->start[l + 1] - m->start[l]) * (m->start[l] - m->start[l - 1]);
      m->V[l] = rp; rp += size;
      m->VT[l] = rp; rp += size;
    }
    m->w_out = rp; rp += m->N * n;
    m->b_y = rp; rp += n;
    m->S = rp; rp += m->N * n;
    m->origin_out = rp; rp += n;
    m->origin_inv_t = rp; rp += n * n;
  }
  for (int k = 0; k < head; k++) {
    dense *d = &net->head[k];
    d->in = *ip++; d->out = *ip++;
    if (d->out > MAX_WIDTH) return -1;
    d->WT = rp; rp += d->in * d->out;
    d->b = rp; rp += d->out;
  }
  return 0;
}

/* Hidden units h = relu(z) of M at x, block by block (MonotoneMap.preactivation); loops
 * run along memory, and skip units the ReLU zeroed. */
static void hidden(const monotone *m, int n, const double *x, double *h) {
  for (int j = 0; j < m->N; j++) h[j] = 0.0;
  for (int i = 0; i < n; i++) {
    const double xi = x[i], *row = m->w_in + i * m->N;
    for (int j = 0; j < m->N; j++) h[j] += xi * row[j];
  }
  for (int j = 0; j < m->N; j++) h[j] += m->b[j];
  for (int j = m->start[0]; j < m->start[1]; j++) h[j] = h[j] > 0.0 ? h[j] : 0.0;
  for (int l = 1; l < m->blocks; l++) {
    int lo = m->start[l], hi = m->start[l + 1], plo = m->start[l - 1], bw = hi - lo;
    double acc[bw];
    for (int j = 0; j < bw; j++) acc[j] = 0.0;
    /* acc = V h_prev as a sum of columns: vectorises, and the zeroed units drop out. */
    for (int i = plo; i < lo; i++) {
      if (h[i] == 0.0) continue;
      const double hi_ = h[i], *col = m->VT[l] + (i - plo) * bw;
      for (int j = 0; j < bw; j++) acc[j] += hi_ * col[j];
    }
    for (int j = 0; j < bw; j++) {
      double s = h[lo + j] + acc[j];
      h[lo + j] = s > 0.0 ? s : 0.0;
    }
  }
}

/* F = M(x) - y given the hidden units h at x; returns max |F| (NaN if any is NaN). */
static double residual(const monotone *m, int n, const double *x, const double *h,
                       const double *y, double *f) {
  double t[n];
  for (int i = 0; i < n; i++) t[i] = 0.0;
  for (int j = 0; j < m->N; j++) {
    if (h[j] == 0.0) continue;
    const double hj = h[j], *row = m->w_out + j * n;
    for (int i = 0; i < n; i++) t[i] += hj * row[i];
  }
  double f_max = 0.0;
  for (int i = 0; i < n; i++) {
    f[i] = (m->mu * x[i] + t[i] + m->b_y[i]) - y[i];
    double a = fabs(f[i]);
    if (a > f_max || isnan(a)) f_max = a;
  }
  return f_max;
}

/* dM/dx (n x n, row-major) from the hidden units h (MonotoneMap.jacobian_at). Only the
 * active units have nonzero rows of G = dh/dx, so the loops run over a list of them. */
static void jacobian(const monotone *m, int n, const double *h, double *g, double *jac) {
  int active[m->N], count = 0, first[MAX_BLOCKS + 1];
  double acc[n];
  for (int l = 0; l < m->blocks; l++) {
    first[l] = count;
    for (int j = m->start[l]; j < m->start[l + 1]; j++)
      if (h[j] > 0.0) active[count++] = j;
  }
  first[m->blocks] = count;
  /* Block by block: G_l = D_l (S_l + V_l G_(l-1)). Few joints (narrow rows): each row of
   * G_l sums rows of G_(l-1) in a local array; many: G_(l-1)'s rows are added into G_l's,
   * which streams better (measured: planar3 and Magneto, docs/COMPILED.md). */
  for (int a = (n < WIDE_ROWS ? first[0] : 0); a < (n < WIDE_ROWS ? first[1] : count); a++)
    memcpy(g + active[a] * n, m->S + active[a] * n, sizeof(double) * n);
  for (int l = 1; l < m->blocks; l++) {
    int lo = m->start[l], plo = m->start[l - 1], pw = lo - plo, bw = m->start[l + 1] - lo;
    if (n < WIDE_ROWS) {
      for (int a = first[l]; a < first[l + 1]; a++) {
        int j = active[a];
        const double *v = m->V[l] + (j - lo) * pw;
        for (int i = 0; i < n; i++) acc[i] = 0.0;
        for (int b = first[l - 1]; b < first[l]; b++) {
          const double vk = v[active[b] - plo], *gk = g + active[b] * n;
          for (int i = 0; i < n; i++) acc[i] += vk * gk[i];
        }
        for (int i = 0; i < n; i++) g[j * n + i] = m->S[j * n + i] + acc[i];
      }
    } else {
      /* Four rows of G_(l-1) at a time: a quarter of the loads and stores of G_l. */
      int b = first[l - 1];
      for (; b + 4 <= first[l]; b += 4) {
        const double *c0 = m->VT[l] + (active[b] - plo) * bw, *c1 = m->VT[l] + (active[b + 1] - plo) * bw;
        const double *c2 = m->VT[l] + (active[b + 2] - plo) * bw, *c3 = m->VT[l] + (active[b + 3] - plo) * bw;
        const double *g0 = g + active[b] * n, *g1 = g + active[b + 1] * n;
        const double *g2 = g + active[b + 2] * n, *g3 = g + active[b + 3] * n;
        for (int a = first[l]; a < first[l + 1]; a++) {
          const int j = active[a] - lo;
          const double v0 = c0[j], v1 = c1[j], v2 = c2[j], v3 = c3[j];
          double *gj = g + active[a] * n;
          for (int i = 0; i < n; i++) gj[i] += (v0 * g0[i] + v1 * g1[i]) + (v2 * g2[i] + v3 * g3[i]);
        }
      }
      for (; b < first[l]; b++) {
        const double *col = m->VT[l] + (active[b] - plo) * bw, *gk = g + active[b] * n;
        for (int a = first[l]; a < first[l + 1]; a++) {
          const double vk = col[active[a] - lo];
          double *gj = g + active[a] * n;
          for (int i = 0; i < n; i++) gj[i] += vk * gk[i];
        }
      }
    }
  }
  /* jac = mu I + gamma S^T G over the active units, four units at a time. */
  for (int r = 0; r < n * n; r++) jac[r] = 0.0;
  int a = 0;
  for (; a + 4 <= count; a += 4) {
    const double *s0 = m->S + active[a] * n, *s1 = m->S + active[a + 1] * n;
    const double *s2 = m->S + active[a + 2] * n, *s3 = m->S + active[a + 3] * n;
    const double *g0 = g + active[a] * n, *g1 = g + active[a + 1] * n;
    const double *g2 = g + active[a + 2] * n, *g3 = g + active[a + 3] * n;
    for (int r = 0; r < n; r++) {
      const double k0 = m->gamma * s0[r], k1 = m->gamma * s1[r];
      const double k2 = m->gamma * s2[r], k3 = m->gamma * s3[r];
      double *row = jac + r * n;
      for (int c = 0; c < n; c++) row[c] += (k0 * g0[c] + k1 * g1[c]) + (k2 * g2[c] + k3 * g3[c]);
    }
  }
  for (; a < count; a++) {
    const double *sj = m->S + active[a] * n, *gj = g + active[a] * n;
    for (int r = 0; r < n; r++) {
      const double c_r = m->gamma * sj[r];
      for (int c = 0; c < n; c++) jac[r * n + c] += c_r * gj[c];
    }
  }
  for (int r = 0; r < n; r++) jac[r * n + r] += m->mu;
}

/* Solves A x = b in place (A n x n row-major, destroyed) by LU with partial pivoting, as
 * LAPACK's dgesv; returns 0, or 1 for a singular matrix. */
static int lu_solve(int n, double *a, double *b) {
  for (int k = 0; k < n; k++) {
    int piv = k;
    for (int r = k + 1; r < n; r++)
      if (fabs(a[r * n + k]) > fabs(a[piv * n + k])) piv = r;
    if (a[piv * n + k] == 0.0) return 1;
    if (piv != k) {
      for (int c = 0; c < n; c++) {
        double t = a[k * n + c]; a[k * n + c] = a[piv * n + c]; a[piv * n + c] = t;
      }
      double t = b[k]; b[k] = b[piv]; b[piv] = t;
    }
    for (int r = k + 1; r < n; r++) {
      double f = a[r * n + k] / a[k * n + k];
      if (f == 0.0) continue;
      for (int c = k + 1; c < n; c++) a[r * n + c] -= f * a[k * n + c];
      b[r] -= f * b[k];
    }
  }
  for (int k = n - 1; k >= 0; k--) {
    double s = b[k];
    for (int c = k + 1; c < n; c++) s -= a[k * n + c] * b[c];
    b[k] = s / a[k * n + k];
  }
  return 0;
}

/* M^-1(y) for one row by semismooth Newton with backtracking (NewtonInverse._solve_row);
 * x holds the warm start (or is set from the linearisation at 0 when cold). Returns 1 when
 * converged; *iterations is the iteration count. */
static int newton_row(const monotone *m, int n, const double *y, double tol, int max_iter,
                      int warm, double *x, int *iterations) {
  double h[m->N], f[n], g[m->N * n], jac[n * n], step[n], x_new[n], h_new[m->N], f_new[n];
  int start = 0;
  if (!warm) {
    if (max_iter > 0) {
      for (int c = 0; c < n; c++) {
        double s = 0.0;
        for (int r = 0; r < n; r++) s += (y[r] - m->origin_out[r]) * m->origin_inv_t[r * n + c];
        x[c] = s;
      }
      start = 1;
    } else {
      memset(x, 0, sizeof(double) * n);
    }
  }
  hidden(m, n, x, h);
  double f_max = residual(m, n, x, h, y, f);
  for (int it = start; it <= max_iter; it++) {
    if (f_max <= tol) { *iterations = it; return 1; }
    if (it == max_iter) break;
    jacobian(m, n, h, g, jac);
    memcpy(step, f, sizeof(double) * n);
    if (lu_solve(n, jac, step)) break;
    double t = 1.0, f_max_new = 0.0;
    for (int k = 0; k <= MAX_HALVINGS; k++) {
      for (int i = 0; i < n; i++) x_new[i] = x[i] - t * step[i];
      hidden(m, n, x_new, h_new);
      f_max_new = residual(m, n, x_new, h_new, y, f_new);
      if (!(f_max_new > (1.0 - ARMIJO * t) * f_max)) break;
      t *= 0.5;
    }
    memcpy(x, x_new, sizeof(double) * n);
    memcpy(h, h_new, sizeof(double) * m->N);
    memcpy(f, f_new, sizeof(double) * n);
    f_max = f_max_new;
  }
  *iterations = max_iter;
  return 0;
}

/* out = (in - b) R, the inverse of an orthogonal layer. */
static void orthogonal_inverse(const orthogonal *o, int n, const double *in, double *out) {
  for (int j = 0; j < n; j++) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (in[i] - o->b[i]) * o->R[i * n + j];
    out[j] = s;
  }
}

/* out = R in + b. */
static void orthogonal_forward(const orthogonal *o, int n, const double *in, double *out) {
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int j = 0; j < n; j++) s += o->R[i * n + j] * in[j];
    out[i] = s + o->b[i];
  }
}

/* numpy's logaddexp(0, a). */
static double softplus(double a) {
  if (a == 0.0) return LN2;
  double t = -a;
  if (t > 0.0) return log1p(exp(-t));
  if (t <= 0.0) return a + log1p(exp(t));
  return t;
}

/* Predicted cost in cost units: 0.5 |z|^2 + phi(y_n), de-standardised (CostHeadMap). */
static double predicted_cost(const network *net, const double *y_n, const double *z) {
  double a[MAX_WIDTH], b[MAX_WIDTH];
  int width = net->p;
  memcpy(a, y_n, sizeof(double) * width);
  for (int k = 0; k < net->head_layers; k++) {
    const dense *d = &net->head[k];
    for (int o = 0; o < d->out; o++) b[o] = 0.0;
    for (int i = 0; i < d->in; i++) {
      const double ai = a[i], *col = d->WT + i * d->out;
      for (int o = 0; o < d->out; o++) b[o] += ai * col[o];
    }
    for (int o = 0; o < d->out; o++) {
      double s = b[o] + d->b[o];
      b[o] = k + 1 < net->head_layers ? softplus(s) : s;
    }
    width = d->out;
    memcpy(a, b, sizeof(double) * width);
  }
  double zz = 0.0;
  for (int i = 0; i < net->n - net->p; i++) zz += z[i] * z[i];
  return net->cost_mean + net->cost_std * (0.5 * zz + a[0]);
}

/* Clips q into [lower, upper] like np.clip (NaN stays NaN); returns 1 if anything changed. */
static int clip(int n, const double *lower, const double *upper, double *q) {
  int changed = 0;
  for (int i = 0; i < n; i++) {
    double v = q[i];
    if (v < lower[i]) v = lower[i];
    if (v > upper[i]) v = upper[i];
    if (v != q[i] || isnan(v)) changed = 1;
    q[i] = v;
  }
  return changed;
}

#if LOINK_IMPLICIT
#include "implicit_task.c"
#endif

/* ||task(q) - y|| by the problem's true forward kinematics. */
static double task_error(const double *q, const double *y) {
  double t[LOINK_P];
  problem_task(q, t);
  double s = 0.0;
  for (int i = 0; i < LOINK_P; i++) s += (t[i] - y[i]) * (t[i] - y[i]);
  return sqrt(s);
}

/* Damped least squares inside the limits, joints at a limit pushed outward frozen
 * (runtime/refine.py). */
static void refine_dls(const network *net, const double *y, double *q) {
  enum { n = LOINK_N, p = LOINK_P };
  double t[p], e[p], jac[p * n], gram[p * p];
  int blocked[n];
  clip(n, net->lower, net->upper, q);
  for (int step = 0; step < REFINE_MAX_ITER; step++) {
    problem_task(q, t);
    double norm = 0.0;
    for (int i = 0; i < p; i++) { e[i] = y[i] - t[i]; norm += e[i] * e[i]; }
    if (sqrt(norm) < REFINE_TOL) return;
    problem_jacobian(q, jac);                    /* column-major p x n */
    for (int c = 0; c < n; c++) {
      double push = 0.0;
      for (int r = 0; r < p; r++) push += jac[c * p + r] * e[r];
      blocked[c] = (q[c] <= net->lower[c] && push < 0.0) || (q[c] >= net->upper[c] && push > 0.0);
    }
    for (int r = 0; r < p; r++)
      for (int c = 0; c < p; c++) {
        double s = r == c ? REFINE_DAMPING * REFINE_DAMPING : 0.0;
        for (int k = 0; k < n; k++)
          if (!blocked[k]) s += jac[k * p + r] * jac[k * p + c];
        gram[r * p + c] = s;
      }
    if (lu_solve(p, gram, e)) return;
    for (int c = 0; c < n; c++) {
      if (blocked[c]) continue;
      double s = 0.0;
      for (int r = 0; r < p; r++) s += jac[c * p + r] * e[r];
      q[c] += s;
    }
    clip(n, net->lower, net->upper, q);
  }
}

/* The problem's closed form where it lands inside the limits on the task, else damped least
 * squares, both from the start rounded to refine.START_GRID (LOInKSolver._refine); returns
 * the task error. */
static double refine(const network *net, const double *y, double *q) {
  for (int i = 0; i < LOINK_N; i++) q[i] = nearbyint(q[i] * REFINE_START_GRID) / REFINE_START_GRID;
  clip(LOINK_N, net->lower, net->upper, q);
#if LOINK_HAS_CLOSED_FORM
  double exact[LOINK_N];
  problem_closed_form(q, y, exact);
  int inside = 1;
  for (int i = 0; i < LOINK_N; i++)
    inside &= exact[i] >= net->lower[i] && exact[i] <= net->upper[i];
  if (inside) {
    double error = task_error(exact, y);
    if (error <= EXACT_TOL) { memcpy(q, exact, sizeof exact); return error; }
  }
#endif
  refine_dls(net, y, q);
  return task_error(q, y);
}

static double true_cost(const double *q) {
  double cost = problem_cost(q);
  return isnan(cost) ? INFINITY : cost;
}

/* 1 if q breaks a feasibility condition beyond the joint box (some margin > 0). */
static int violated(const double *q) {
#if LOINK_MARGINS > 0
  double margin[LOINK_MARGINS];
  problem_margins(q, margin);
  for (int i = 0; i < LOINK_MARGINS; i++)
    if (margin[i] > 0.0) return 1;
#endif
  (void)q;
  return 0;
}

/* Fields of one row of `info`. */
enum { INFO_PREDICTED, INFO_COST, INFO_ERROR, INFO_CLIPPED, INFO_CONVERGED, INFO_VIOLATED,
       INFO_FIELDS };

int loink_info_fields(void) { return INFO_FIELDS; }

/* x = G^-1(w) in network units by Newton per monotone layer: layer k's input at
 * states + k * stride (its warm start when `warm`); iterations[k] keeps the most any row took.
 * Returns 1 when every layer converged. */
static int invert(const network *net, const double *w, double *states, size_t stride, int warm,
                  double tol, int max_iter, double *x, double *iterations) {
  int n = net->n, converged = 1;
  orthogonal_inverse(&net->orth[net->depth], n, w, x);
  for (int k = net->depth - 1; k >= 0; k--) {
    double *layer_x = states + (size_t)k * stride;
    int its = 0;
    converged &= newton_row(&net->mono[k], n, x, tol, max_iter, warm, layer_x, &its);
    if (iterations && its > iterations[k]) iterations[k] = its;
    orthogonal_inverse(&net->orth[k], n, layer_x, x);
  }
  return converged;
}

/* Network units to joint units, clipped, refined when asked, then checked: one row of info
 * (all but the predicted cost). */
static void finish(const network *net, const double *x, const double *y, int refine_answer,
                   int converged, double *q, double *row) {
  for (int i = 0; i < LOINK_N; i++)
    q[i] = net->x_lower[i] + 0.5 * (x[i] + 1.0) * (net->x_upper[i] - net->x_lower[i]);
  row[INFO_CLIPPED] = clip(LOINK_N, net->lower, net->upper, q);
  row[INFO_ERROR] = refine_answer ? refine(net, y, q) : task_error(q, y);
  row[INFO_COST] = true_cost(q);
  row[INFO_CONVERGED] = converged;
  row[INFO_VIOLATED] = violated(q);
}

/* The validated solve of `rows` tasks with latents: `in` holds y (rows x p, task units),
 * then z (rows x (n - p)). G^-1([y_n; z]) by Newton per monotone layer (warm from `warm`,
 * depth x rows x n, unless NULL), to joint units, clipped, refined when asked, then checked.
 * `out` receives q (rows x n), info (rows x INFO_FIELDS), the monotone layers' inputs
 * (depth x rows x n: a warm start) and the iterations per layer (depth, max over rows).
 * Returns 0, or -1 for a model that does not fit this build. */
int loink_solve(const int *ints, const double *reals, int rows, const double *in,
                const double *warm, double tol, int max_iter, int refine_answer, double *out) {
  network net;
  if (unpack(ints, reals, &net)) return -1;
  /* The problem's sizes as constants: the helpers, inlined, get fixed trip counts. */
  enum { n = LOINK_N, p = LOINK_P };
  int depth = net.depth;
  const double *y = in, *z = in + (size_t)rows * p;
  double *q_out = out, *info = q_out + (size_t)rows * n, *state = info + (size_t)rows * INFO_FIELDS;
  double *iterations = state + (size_t)depth * rows * n;
  double w[n], x[n];
  for (int k = 0; k < depth; k++) iterations[k] = 0;
  for (int r = 0; r < rows; r++) {
    const double *yr = y + r * p, *zr = z + r * (n - p);
    double *q = q_out + r * n, *row = info + r * INFO_FIELDS;
    for (int i = 0; i < p; i++) w[i] = (yr[i] - net.y_mean[i]) / net.y_std[i];
    for (int i = p; i < n; i++) w[i] = zr[i - p];
    row[INFO_PREDICTED] = predicted_cost(&net, w, zr);
    double *states = state + (size_t)r * n;
    if (warm)
      for (int k = 0; k < depth; k++)
        memcpy(states + (size_t)k * rows * n, warm + ((size_t)k * rows + r) * n, sizeof(double) * n);
    int converged = invert(&net, w, states, (size_t)rows * n, warm != NULL, tol, max_iter, x,
                           iterations);
    finish(&net, x, yr, refine_answer, converged, q, row);
  }
  return 0;
}

/* M(a) = mu a + W_out^T h + b_y from the hidden units h at a. */
static void monotone_output(const monotone *m, int n, const double *a, const double *h,
                            double *out) {
  for (int i = 0; i < n; i++) {
    double t = 0.0;
    for (int j = 0; j < m->N; j++) t += h[j] * m->w_out[j * n + i];
    out[i] = m->mu * a[i] + t + m->b_y[i];
  }
}

/* The network G on configurations q (rows x n, joint units) to w (rows x n, network units:
 * normalised task, then latent), and the inputs of each monotone layer to `state`
 * (depth x rows x n) unless NULL: a warm start at q. Returns 0, or -1 as loink_solve. */
int loink_forward(const int *ints, const double *reals, int rows, const double *q,
                  double *w_out, double *state) {
  network net;
  if (unpack(ints, reals, &net)) return -1;
  enum { n = LOINK_N };
  double x[n], a[n], h[net.max_N > 0 ? net.max_N : 1];
  for (int r = 0; r < rows; r++) {
    for (int i = 0; i < n; i++)
      x[i] = 2.0 * (q[r * n + i] - net.x_lower[i]) / (net.x_upper[i] - net.x_lower[i]) - 1.0;
    orthogonal_forward(&net.orth[0], n, x, a);
    for (int k = 0; k < net.depth; k++) {
      const monotone *m = &net.mono[k];
      if (state) memcpy(state + ((size_t)k * rows + r) * n, a, sizeof a);
      hidden(m, n, a, h);
      monotone_output(m, n, a, h, x);
      orthogonal_forward(&net.orth[k + 1], n, x, a);
    }
    memcpy(w_out + r * n, a, sizeof a);
  }
  return 0;
}

/* The learned optimum inside the joint limits (runtime/bounded_latent.py, step for step). */
#define INSIDE_ROUNDS 12
#define INSIDE_HALVINGS 6
#define INSIDE_TOL 1e-9
#define INSIDE_STEP_TOL 1e-4
#define INSIDE_VIOLATION_WEIGHT 1e3
#define QP_FEASIBLE 1e-12        /* a candidate may break a constraint by this (relative) */
#define MAX_LATENT 8             /* latent dimensions the QP's enumeration takes */

/* dG/dx (n x n, row-major) at x in network units: the product of the layers' Jacobians
 * (BiLipMap.jacobian). */
static void network_jacobian(const network *net, const double *x, double *jac) {
  enum { n = LOINK_N };
  double a[n], b[n], t[n * n], dm[n * n], h[net->max_N > 0 ? net->max_N : 1];
  double g[(net->max_N > 0 ? net->max_N : 1) * n];
  orthogonal_forward(&net->orth[0], n, x, a);
  memcpy(jac, net->orth[0].R, sizeof(double) * n * n);
  for (int k = 0; k < net->depth; k++) {
    const monotone *m = &net->mono[k];
    hidden(m, n, a, h);
    jacobian(m, n, h, g, dm);
    monotone_output(m, n, a, h, b);
    orthogonal_forward(&net->orth[k + 1], n, b, a);
    for (int r = 0; r < n; r++)            /* t = dM J, then J = R t */
      for (int c = 0; c < n; c++) {
        double s = 0.0;
        for (int i = 0; i < n; i++) s += dm[r * n + i] * jac[i * n + c];
        t[r * n + c] = s;
      }
    for (int r = 0; r < n; r++)
      for (int c = 0; c < n; c++) {
        double s = 0.0;
        for (int i = 0; i < n; i++) s += net->orth[k + 1].R[r * n + i] * t[i * n + c];
        jac[r * n + c] = s;
      }
  }
}

static double box_violation(const network *net, const double *x) {
  double s = 0.0;
  for (int i = 0; i < LOINK_N; i++) {
    double lo = net->inside_lower[i] - x[i], hi = x[i] - net->inside_upper[i];
    s += (lo > 0.0 ? lo : 0.0) + (hi > 0.0 ? hi : 0.0);
  }
  return s;
}

static double inside_merit(const network *net, const double *x, const double *z, int m) {
  double zz = 0.0;
  for (int i = 0; i < m; i++) zz += z[i] * z[i];
  return INSIDE_VIOLATION_WEIGHT * box_violation(net, x) + 0.5 * zz;
}

/* min 0.5 |z|^2 subject to lo <= A z <= hi (A rows x m, row-major): the least-norm point of
 * the affine hulls of every independent set of at most m active constraints that satisfies
 * them all (the optimum is one of these points, and no feasible one is shorter). Returns 0,
 * or 1 when none is feasible. */
static int least_norm_in_slab(int rows, int m, const double *A, const double *lo,
                              const double *hi, double *z) {
  int half = 2 * rows, pick[MAX_LATENT], found = 0;
  double best = INFINITY;
  for (int size = 0; size <= m; size++) {
    for (int i = 0; i < size; i++) pick[i] = i;
    for (;;) {
      /* Constraint c: row c / 2 at its lower (even c) or upper (odd c) bound. */
      int pair = 0;
      for (int i = 1; i < size; i++) pair |= pick[i] / 2 == pick[i - 1] / 2;
      if (!pair) {
        double gram[MAX_LATENT * MAX_LATENT], d[MAX_LATENT], cand[MAX_LATENT];
        for (int i = 0; i < size; i++) {
          const double *ai = A + (pick[i] / 2) * m;
          d[i] = pick[i] % 2 ? hi[pick[i] / 2] : lo[pick[i] / 2];
          for (int j = 0; j < size; j++) {
            const double *aj = A + (pick[j] / 2) * m;
            double s = 0.0;
            for (int c = 0; c < m; c++) s += ai[c] * aj[c];
            gram[i * size + j] = s;
          }
        }
        if (!lu_solve(size, gram, d)) {
          double norm = 0.0;
          for (int c = 0; c < m; c++) {
            double s = 0.0;
            for (int i = 0; i < size; i++) s += A[(pick[i] / 2) * m + c] * d[i];
            cand[c] = s;
            norm += s * s;
          }
          int feasible = norm < best;
          for (int r = 0; r < rows && feasible; r++) {
            double s = 0.0;
            for (int c = 0; c < m; c++) s += A[r * m + c] * cand[c];
            feasible = s >= lo[r] - QP_FEASIBLE * (1.0 + fabs(lo[r]))
                       && s <= hi[r] + QP_FEASIBLE * (1.0 + fabs(hi[r]));
          }
          if (feasible) { best = norm; memcpy(z, cand, sizeof(double) * m); found = 1; }
        }
      }
      int i = size - 1;              /* the next combination of `size` of the `half` */
      while (i >= 0 && pick[i] == half - size + i) i--;
      if (i < 0) break;
      pick[i]++;
      for (int j = i + 1; j < size; j++) pick[j] = pick[j - 1] + 1;
    }
  }
  return !found;
}

/* The least-norm latent z whose inverse is inside the limits, from z = 0's inverse x (its
 * layer inputs in `states`, stride n): sequential QPs on the first-order answer, with a
 * backtracking line search on the merit. Updates x, states and z; returns the convergence of
 * the inverse it ends on. */
static int least_latent_inside(const network *net, const double *y_n, double *x, double *states,
                               double *z, int converged, double tol, int max_iter) {
  enum { n = LOINK_N, p = LOINK_P, m = LOINK_N - LOINK_P };
  int depth = net->depth;
  double jac[n * n], a[n * n], dx_dz[n * m], lo[n], hi[n], target[m], step[m], w[n];
  double trial_x[n], trial_states[MAX_DEPTH * n];
  for (int i = 0; i < m; i++) z[i] = 0.0;
  if (box_violation(net, x) <= INSIDE_TOL) return converged;
  for (int round = 0; round < INSIDE_ROUNDS; round++) {
    network_jacobian(net, x, jac);
    for (int c = 0; c < m; c++) {          /* columns p.. of the inverse Jacobian */
      double e[n];
      memcpy(a, jac, sizeof jac);
      for (int i = 0; i < n; i++) e[i] = i == p + c ? 1.0 : 0.0;
      lu_solve(n, a, e);
      for (int i = 0; i < n; i++) dx_dz[i * m + c] = e[i];
    }
    for (int i = 0; i < n; i++) {
      double offset = -x[i];
      for (int c = 0; c < m; c++) offset += dx_dz[i * m + c] * z[c];
      lo[i] = net->inside_lower[i] + offset;
      hi[i] = net->inside_upper[i] + offset;
    }
    if (least_norm_in_slab(n, m, dx_dz, lo, hi, target)) {
      /* No latent inside to first order: the least violation, z + lstsq(dx/dz, clip(x) - x). */
      double normal[m * m], rhs[m];
      for (int r = 0; r < m; r++) {
        rhs[r] = 0.0;
        for (int i = 0; i < n; i++) {
          double c = x[i] < net->inside_lower[i] ? net->inside_lower[i]
                     : x[i] > net->inside_upper[i] ? net->inside_upper[i] : x[i];
          rhs[r] += dx_dz[i * m + r] * (c - x[i]);
        }
        for (int c = 0; c < m; c++) {
          double s = 0.0;
          for (int i = 0; i < n; i++) s += dx_dz[i * m + r] * dx_dz[i * m + c];
          normal[r * m + c] = s;
        }
      }
      lu_solve(m, normal, rhs);
      for (int c = 0; c < m; c++) target[c] = z[c] + rhs[c];
    }
    double current = inside_merit(net, x, z, m), largest = 0.0;
    for (int c = 0; c < m; c++) {
      step[c] = target[c] - z[c];
      if (fabs(step[c]) > largest) largest = fabs(step[c]);
    }
    if (box_violation(net, x) <= INSIDE_TOL && largest <= INSIDE_STEP_TOL) break;
    int accepted = 0;
    for (int h = 0; h < INSIDE_HALVINGS && !accepted; h++) {
      double zt[m];
      for (int c = 0; c < m; c++) zt[c] = z[c] + step[c];
      memcpy(w, y_n, sizeof(double) * p);
      memcpy(w + p, zt, sizeof zt);
      memcpy(trial_states, states, sizeof(double) * depth * n);
      int trial_converged = invert(net, w, trial_states, n, 1, tol, max_iter, trial_x, NULL);
      if (inside_merit(net, trial_x, zt, m) < current) {
        memcpy(z, zt, sizeof zt);
        memcpy(x, trial_x, sizeof trial_x);
        memcpy(states, trial_states, sizeof(double) * depth * n);
        converged = trial_converged;
        accepted = 1;
      } else {
        for (int c = 0; c < m; c++) step[c] /= 2.0;
      }
    }
    if (!accepted) break;
  }
  return converged;
}

/* The validated learned optimum inside the limits of `rows` tasks y (rows x p): z = 0's
 * inverse (warm from `warm`, depth x rows x n, unless NULL), moved by least_latent_inside where
 * it leaves the limits, then to joint units, clipped, refined when asked and checked; its
 * clipped field says whether the rounds ended outside the limits (by more than INSIDE_TOL).
 * `out` receives q (rows x n), info (rows x INFO_FIELDS) and z (rows x (n - p)). Returns 0, or -1
 * as loink_solve. */
int loink_solve_inside(const int *ints, const double *reals, int rows, const double *y,
                       const double *warm, double tol, int max_iter, int refine_answer,
                       double *out) {
  network net;
  if (unpack(ints, reals, &net)) return -1;
  enum { n = LOINK_N, p = LOINK_P, m = LOINK_N - LOINK_P };
  if (m > MAX_LATENT || net.depth > MAX_DEPTH) return -1;
  double *q_out = out, *info = q_out + (size_t)rows * n, *z_out = info + (size_t)rows * INFO_FIELDS;
  double w[n], x[n], states[MAX_DEPTH * n];
  for (int r = 0; r < rows; r++) {
    const double *yr = y + r * p;
    double *z = z_out + r * m, *row = info + r * INFO_FIELDS;
    for (int i = 0; i < p; i++) w[i] = (yr[i] - net.y_mean[i]) / net.y_std[i];
    for (int i = p; i < n; i++) w[i] = 0.0;
    if (warm)
      for (int k = 0; k < net.depth; k++)
        memcpy(states + k * n, warm + ((size_t)k * rows + r) * n, sizeof(double) * n);
    int converged = invert(&net, w, states, n, warm != NULL, tol, max_iter, x, NULL);
    converged = least_latent_inside(&net, w, x, states, z, converged, tol, max_iter);
    row[INFO_PREDICTED] = predicted_cost(&net, w, z);
    int outside = box_violation(&net, x) > INSIDE_TOL;
    finish(&net, x, yr, refine_answer, converged, q_out + r * n, row);
    row[INFO_CLIPPED] = outside;   /* the rounds ended outside the limits */
  }
  return 0;
}

#if LOINK_HAS_POSE
#include "pose_newton.c"
#include "loink_pose.h"
#include "continuation.c"
#include "ranked_search.c"
#include "path_plan.c"
#endif
