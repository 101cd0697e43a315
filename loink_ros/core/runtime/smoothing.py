"""The smoothing rule of METHOD.md s.4, shared by tracking and seed-consistent pose solves."""


def smoothing_share(smoothing: float) -> float:
    """mu_s / (1 + mu_s): the share of the previous (or seed's) latent the next one keeps,
    the minimiser of 0.5 ||z||^2 + (mu_s / 2) ||z - z_previous||^2 over z."""
    return smoothing / (1.0 + smoothing)
