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
  int continuation_rounds;    /* ... of a continuation that failed: its seed's reach is small */
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
  /* A request with a seed and no seed weight continues from the seed (continuation.c) when
   * the seed's pose lies within continuation_gate (m, rad) of the target, each joint moving
   * at most continuation_reach[0] + [1] d_position + [2] d_rotation on the way; the answer
   * then drifts down the cost along the self-motion, each joint within drift_share x t x its
   * velocity (t: the least time the step takes at the `velocity` joint speeds), unless that
   * brings it nearer a singularity than singular_margin (smallest singular value). */
  double continuation_gate[2];
  double continuation_reach[3];
  double drift_share;
  double singular_margin;
  const double *velocity;     /* n: the joints' velocity limits (URDF), or ones */
} loink_pose_settings;

/* One query (pose_solver.PoseRequest). */
typedef struct {
  const double *target;       /* 12: position, then the rotation row by row */
  int position_only;          /* 1: the orientation is free */
  int count;                  /* valid answers wanted, at least 1 */
  int attempt;                /* k > 0: the k-th set of fresh starts */
  const double *lower;        /* n: the request's bounds, inside the model's limits but on a
                                 joint whose model range is a full turn (the plugin gives the
                                 group's bounds there: the same poses a turn on) */
  const double *upper;
  const double *seed;         /* n, or NULL */
  double seed_weight;         /* w > 0 with a seed: w ||q - seed||^2 joins the cost */
  double tol_position;        /* a solution's largest pose error (m, rad) */
  double tol_rotation;
  double deadline;            /* CLOCK_MONOTONIC seconds; <= 0: max_rounds rounds */
  int approximate;            /* 1 (MoveIt's return_approximate_solution: Servo): with a seed
                                 within the limits, the continuation alone (each joint within
                                 0.25 rad), whatever the seed's distance from the pose, and no
                                 search where it fails */
} loink_pose_request;

/* The caller's own check of an answer within the tolerances (its forward kinematics, a
 * collision check): 0 accepts q (n), anything else rejects it. */
typedef int (*loink_accept)(void *context, const double *q);

enum { LOINK_RANKED_POSITION_ERROR, LOINK_RANKED_ROTATION_ERROR, LOINK_RANKED_OBJECTIVE,
       LOINK_RANKED_COST, LOINK_RANKED_SOURCE, LOINK_RANKED_FIELDS };
enum { LOINK_SOURCE_PRIOR, LOINK_SOURCE_OPTIMUM, LOINK_SOURCE_LATENT, LOINK_SOURCE_SEED,
       LOINK_SOURCE_RESTART, LOINK_SOURCE_CONTINUATION };

int loink_ranked_fields(void);

/* Where the request has a seed, no seed weight, and is a continuation (above): its answer
 * comes first (source LOINK_SOURCE_CONTINUATION) when it is valid and the caller accepts it,
 * the other answers following as below, at least `distinct` from it; otherwise the search
 * below runs within the seed's reach alone (an answer farther would be a jump) for
 * continuation_rounds rounds at most, and where it finds none, row 0 is the continuation's
 * attempt (source LOINK_SOURCE_CONTINUATION): the answer nearest the seed on its branch, as
 * soon as it is certain. An approximate request skips that search: row 0 is the attempt at
 * once. Every attempt alike.
 * Up to request->count valid answers at least `distinct` apart, lowest objective first,
 * into q_out (count x n) and info (count x LOINK_RANKED_FIELDS); returns how many. 0: none
 * was valid by the deadline, and row 0 holds the answer closest to the pose. -1: the model
 * does not fit this library. `tried` receives the number of starts refined. */
int loink_pose_ranked(const int *ints, const double *reals, const loink_pose_settings *settings,
                      const loink_pose_request *request, loink_accept accept, void *context,
                      double *q_out, double *info, int *tried);

/* How a step continues (continuation.c; runtime/continuation.py). */
typedef struct {
  double smoothing;           /* mu_s of the drift's objective cost + mu_s ||q - from||^2 */
  double drift_share;         /* the drift box: drift_share x reach (velocity NULL: a stream, whose
                                 reach is its velocity budget), or drift_share x t x velocity, t
                                 the least time the step takes at those speeds (a request) */
  const double *velocity;     /* n, or NULL */
  double singular_margin;     /* the drift may not end nearer a singularity than this (smallest
                                 singular value of the pose Jacobian) and than before */
  double exact_position;      /* on the pose within these (m, rad) */
  double exact_rotation;
} loink_continue_settings;

/* One step on from `from` (n) towards `target` (12) inside lower/upper (n): Gauss-Newton
 * inside from +/- reach (n), its steps at most half the reach; then, where that is on the pose,
 * the descent of cost + smoothing ||q - from||^2 along the self-motion inside the drift box
 * (above), kept unless it ends nearer a singularity than before and than singular_margin, and
 * for a request where the arm is less agile there (the tip's slowest speed at the velocity
 * limits). q_out (n), info: position error, rotation error, 1 if it drifted. Returns 1 on the
 * pose, else 0. */
int loink_pose_continue(const double *target, int position_only, const double *from,
                        const double *reach, const double *lower, const double *upper,
                        const loink_continue_settings *how, double *q_out, double *info);
int loink_continue_fields(void);

/* How a whole Cartesian path is planned (path_plan.c; runtime/cartesian_path.py). */
typedef struct {
  int beam;                     /* configurations kept per pose */
  int value_share;              /* of them, the lowest in value; the rest farthest apart */
  double separation;            /* least largest-joint difference between two kept */
  int explore_count;            /* neighbours along the self-motion each way, at */
  const double *explore_shares; /* these shares of the box */
  double lag;                   /* a lagging pose's added value (x 1 + mm + 10 mrad off) */
  double smoothing;             /* mu of the value cost(q) + mu ||q - q_parent||^2 */
  double exact_position;        /* on target within these (m, rad) */
  double exact_rotation;
} loink_plan_settings;

/* One path: `count` poses (12 each) from the `first_count` configurations of pose 0. */
typedef struct {
  int count;
  const double *poses;
  int position_only;
  const double *times;          /* count (s), or NULL: untimed */
  const double *velocity;       /* n: timed, each joint's largest speed (limit x scale) */
  const double *jump;           /* n, or NULL: untimed, each joint's largest step */
  const double *lower, *upper;  /* n */
  int first_count;              /* 1 .. beam */
  const double *first;          /* first_count x n, on pose 0 */
  const double *first_value;    /* first_count: their values */
} loink_plan_request;

enum { LOINK_PLAN_ON_TARGET, LOINK_PLAN_COST, LOINK_PLAN_FIELDS };
int loink_plan_fields(void);

/* The lowest-value sequence of configurations through the poses: q_out (planned x n), info
 * (planned x LOINK_PLAN_FIELDS); returns how many poses are planned (all of a timed path; an
 * untimed one up to the first no configuration reaches on target), -1 for bad settings.
 * work: count x beam x (n + 2) doubles, links: count x (beam + 1) ints. `accept` (or NULL)
 * may refuse a candidate (a collision check). `settings` gives the continuation's reach. */
int loink_plan_path(const loink_pose_settings *settings, const loink_plan_settings *how,
                    const loink_plan_request *request, loink_accept accept, void *context,
                    double *work, int *links, double *q_out, double *info);

#ifdef __cplusplus
}
#endif

#endif
