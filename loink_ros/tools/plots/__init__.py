"""`loink plot ...`: the paper's figures (latent space and spread, Magneto, HSA, pose stream)."""
