"""Torch building blocks of the LOInK network (training side only)."""
