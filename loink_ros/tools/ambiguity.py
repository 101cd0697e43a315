"""The one-clear-optimum criterion the benches and `loink design` share (METHOD.md s.6)."""

NEAR_OPTIMAL = 0.02   # a configuration within 2 % of the best cost (or cost range) is near-optimal
AMBIGUOUS_SPAN = 0.3  # rad: a task is ambiguous when a near-optimal one lies farther from the best
