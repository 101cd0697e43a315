/* The ranked full-pose solve of a kinematic model's compiled library (kernel.c,
 * runtime/pose_solver.py is its reference): one C entry point for every caller, the node
 * (through ctypes) and the MoveIt plugin alike. docs/COMPILED.md describes it. */
#ifndef LOINK_POSE_H
#define LOINK_POSE_H

#ifdef __cplusplus
extern "C" {
#endif

/* What a solver fixes once per model (pose_solver.PoseSolver's settings). */
typedef struct {
  int prior_count;            /* starts drawn around the cost's minimiser (or uniform) */
  int restarts;               /* uniform starts per fallback round */
  int descents;               /* starts descended along the self-motion per batch */
  int max_rounds;             /* fallback rounds at most (the deadline usually ends them) */
  int latent_count;           /* rows of `latents`: the network's starts (the first: z = 0) */
  int network_for_poses;      /* network starts for full poses too, not only position-only */
  int inverse_max_iter;       /* Newton cap of the network inverse, per layer */
  double inverse_tol;         /* Newton tolerance of the network inverse, per layer */
  double distinct;            /* answers closer than this (largest joint) are one answer */
  double exact_position;      /* refined poses within these (m, rad) are exact */
  double exact_rotation;
  const double *centre;       /* n: the cost's minimiser, or NULL: uniform prior starts */
  const double *spread;       /* n: std of the prior draws around the centre */
  const int *task_rows;       /* p: the tip position coordinate of each task value */
  const double *task_lower;   /* p: the network's task is clipped into these bounds */
  const double *task_upper;
  const double *latents;      /* latent_count x (n - p) */
} loink_pose_settings;

/* One query (pose_solver.PoseRequest). */
typedef struct {
  const double *target;       /* 12: position, then the rotation row by row */
  int position_only;          /* 1: the orientation is free */
  int count;                  /* valid answers wanted, at least 1 */
  int attempt;                /* k > 0: the k-th set of fresh starts */
  const double *lower;        /* n: the request's bounds, inside the model's limits */
  const double *upper;
  const double *seed;         /* n, or NULL */
  double seed_weight;         /* w > 0 with a seed: w ||q - seed||^2 joins the cost */
  double tol_position;        /* a solution's largest pose error (m, rad) */
  double tol_rotation;
  double deadline;            /* CLOCK_MONOTONIC seconds; <= 0: max_rounds rounds */
} loink_pose_request;

/* The caller's own check of an answer within the tolerances (its forward kinematics, a
 * collision check): 0 accepts q (n), anything else rejects it. */
typedef int (*loink_accept)(void *context, const double *q);

enum { LOINK_RANKED_POSITION_ERROR, LOINK_RANKED_ROTATION_ERROR, LOINK_RANKED_OBJECTIVE,
       LOINK_RANKED_COST, LOINK_RANKED_SOURCE, LOINK_RANKED_FIELDS };
enum { LOINK_SOURCE_PRIOR, LOINK_SOURCE_OPTIMUM, LOINK_SOURCE_LATENT, LOINK_SOURCE_SEED,
       LOINK_SOURCE_RESTART };

int loink_ranked_fields(void);

/* Up to request->count valid answers at least `distinct` apart, lowest objective first,
 * into q_out (count x n) and info (count x LOINK_RANKED_FIELDS); returns how many. 0: none
 * was valid by the deadline, and row 0 holds the answer closest to the pose. -1: the model
 * does not fit this library. `tried` receives the number of starts refined. */
int loink_pose_ranked(const int *ints, const double *reals, const loink_pose_settings *settings,
                      const loink_pose_request *request, loink_accept accept, void *context,
                      double *q_out, double *info, int *tried);

#ifdef __cplusplus
}
#endif

#endif
