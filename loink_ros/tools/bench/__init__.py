"""`loink bench ...`: one module per bench (fit, hsa, imports, magneto, magneto_verify,
moveit_plugin, node, panda, planar3, pose, stream, threads) and what they share: timing,
targets, stream paths, the empty service (the node bench's floor), the collision checker."""
