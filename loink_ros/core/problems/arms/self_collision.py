"""Self-collision of a robot: its URDF collision geometry (Pinocchio, coal), less the link
pairs its SRDF disables (adjacent or never touching). Collisions with the environment are
the application's (MoveIt's planning scene), not this module's."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin


def reduced_with_geometry(model: pin.Model, urdf: Path, srdf: Path, package_dirs: list[str],
                          locked: list[int], reference: np.ndarray | None = None
                          ) -> tuple[pin.Model, pin.GeometryModel]:
    """The model with `locked` joints fixed at `reference` (default neutral), and its collision geometry with the
    SRDF's disabled pairs removed."""
    with warnings.catch_warnings():   # Pinocchio warns when package dirs are given twice
        warnings.simplefilter('ignore', UserWarning)
        geometry = pin.buildGeomFromUrdf(model, str(urdf), pin.COLLISION, package_dirs)
    geometry.addAllCollisionPairs()
    pin.removeCollisionPairs(model, geometry, str(srdf))
    if not locked:
        return model, geometry
    reference = pin.neutral(model) if reference is None else reference
    return pin.buildReducedModel(model, geometry, locked, reference)


class SelfCollision:
    """Which link pairs of a configuration touch; thread-safe (workspaces per thread)."""

    def __init__(self, model: pin.Model, geometry: pin.GeometryModel):
        self.model, self.geometry = model, geometry
        self._local = threading.local()
        parents = [model.frames[g.parentFrame].name for g in geometry.geometryObjects]
        self._links = [(parents[p.first], parents[p.second]) for p in geometry.collisionPairs]

    @property
    def link_pairs(self) -> list[tuple[str, str]]:
        """The links of each geometry pair checked (after the SRDF's removals)."""
        return list(self._links)

    def colliding_links(self, q_pinocchio: np.ndarray) -> list[tuple[str, str]]:
        """The link pairs in contact at Pinocchio configuration q, each once, in pair order."""
        local = self._local
        if not hasattr(local, 'data'):
            local.data, local.geometry = self.model.createData(), pin.GeometryData(self.geometry)
        if not pin.computeCollisions(self.model, local.data, self.geometry, local.geometry,
                                     q_pinocchio, False):
            return []
        hits = [links for links, result in zip(self._links, local.geometry.collisionResults)
                if result.isCollision()]
        return list(dict.fromkeys(hits))
