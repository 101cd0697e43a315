"""`loink robot ...`: your own arm from a URDF: init writes its description, check tests it,
train runs every stage (dataset, training, export, bench, report)."""
