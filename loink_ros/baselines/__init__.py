"""Baselines LOInK is measured against (IPOPT, SLSQP references); used by tools and tests only."""
