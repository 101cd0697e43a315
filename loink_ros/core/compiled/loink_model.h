/* One model built into its library (compiled/model_library.py): what a C or C++ caller such
 * as the MoveIt plugin needs to solve with it, with no Python and no model file parser. */
#ifndef LOINK_MODEL_H
#define LOINK_MODEL_H

#include "loink_pose.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever loink_model_data or loink_pose.h change. */
#define LOINK_MODEL_ABI 5

typedef struct {
  int abi;                          /* LOINK_MODEL_ABI of the build */
  const char *model_name;           /* the model file's name */
  const char *identity;             /* model_library.identity() of the model JSON it holds */
  int n;                            /* joints */
  const char *const *joint_names;   /* n, model order */
  const char *base_frame;           /* the task's frame */
  const char *tip_frame;            /* the link whose pose the solve sets */
  const double *lower, *upper;      /* n: the model's joint limits */
  double reach;                     /* certified: the tip is never farther from the base origin
                                       (problems/arms/reach.py), so a farther pose is unreachable */
  const int *ints;                  /* the packed model (docs/COMPILED.md) */
  const double *reals;
  loink_pose_settings settings;     /* the node's PoseSolver settings for this model */
  const char *build_key;            /* build.cache_key of the problem's library: the sources,
                                       compiler and flags it was built from */
} loink_model_data;

const loink_model_data *loink_model(void);

/* The CPU features the rest of the library was compiled for (space separated; "" when built
 * portable), and the ones this CPU lacks, written into out (size bytes), their count returned
 * (compiled/cpu_features.py). Safe on any CPU: a loader calls it first and refuses the
 * library where the count is not 0, since any other call could die on an illegal instruction. */
extern const char loink_cpu_features[];
int loink_cpu_missing(char *out, int size);

#ifdef __cplusplus
}
#endif

#endif
