"""A portrait made animatable: its rig, its warp mesh and its mouth, turning a pose into a frame."""

from __future__ import annotations

import numpy as np

from e3rg_core.video import topology as T
from e3rg_core.video.landmarks import Portrait
from e3rg_core.video.mouth import mouth_model, paint_mouth
from e3rg_core.video.rig import UNITS, build_rig
from e3rg_core.video.warp import TriangleWarp, anchor_rings

_N = 468


class Puppet:
    """Renders frames of one portrait from unit weights and a head pose."""

    def __init__(self, portrait: Portrait, *, map_scale: float = 0.25) -> None:
        self.portrait = portrait
        self.rig = build_rig(portrait.points)
        self.inner, self.outer, self.border = anchor_rings(portrait.points, portrait.size_px)
        vertices = np.concatenate([self.rig.rest, self.rig.helpers, self.inner, self.outer, self.border])
        still = np.zeros(len(vertices), dtype=bool)
        still[_N + len(self.rig.helpers) + len(self.inner):] = True
        self._helper_depth = self.rig.depth[self.rig.helper_parents]
        n_helpers = len(self.rig.helpers)
        lids = [np.concatenate([up, low, _N + np.flatnonzero(np.isin(self.rig.helper_parents, low))])
                for up, low in ((T.LEFT_EYE_UPPER, T.LEFT_EYE_LOWER), (T.RIGHT_EYE_UPPER, T.RIGHT_EYE_LOWER))]
        lips = np.array(T.UPPER_OUTER + T.LOWER_OUTER)
        self.warp = TriangleWarp(portrait.image, vertices, map_scale=map_scale, still=still,
                                 sharp=(*lids, lips) if n_helpers else (lips,))
        self.mouth = mouth_model(portrait.image, portrait.points, self.rig.iod_px,
                                 relaxed=self.rig.rest + self.rig.units[UNITS.index("relax")])
        # the chin's jaw travel drags the anchors under it a little (the skin of the neck)
        chin_drop = self.rig.units[UNITS.index("jaw_open"), T.CHIN]
        below = np.clip((self.inner[:, 1] - self.rig.rest[T.CHIN, 1] + 0.6 * self.rig.iod_px) / (0.6 * self.rig.iod_px), 0, 1)
        self._inner_jaw = below[:, None] * chin_drop[None, :] * 0.5
        self._inner_depth = np.full(len(self.inner), self.rig.axis_depth - 0.9 * self.rig.iod_px)
        self._jaw = UNITS.index("jaw_open")
        self._relax = UNITS.index("relax")

    @property
    def size_px(self) -> int:
        return self.portrait.size_px

    def points(self, weights: np.ndarray, head: np.ndarray) -> np.ndarray:
        """Where the 468 mesh points are in a frame."""
        return self.rig.head(self.rig.displace(weights), head)

    def targets(self, weights: np.ndarray, head: np.ndarray) -> np.ndarray:
        """Where every warp vertex goes in a frame: the 468 face points first, then the helpers and anchors."""
        face = self.points(weights, head)
        helpers = self.rig.head(self.rig.displace_helpers(weights), head, depth=self._helper_depth)
        inner = self.rig.head(self.inner + weights[self._jaw] * self._inner_jaw, head, depth=self._inner_depth)
        return np.concatenate([face, helpers, inner, self.outer, self.border])

    def frame(self, weights: np.ndarray, head: np.ndarray) -> np.ndarray:
        """One RGB frame for unit weights ``[len(UNITS)]`` and head pose ``[5]``."""
        target = self.targets(weights, head)
        image = self.warp.warp(target)
        return paint_mouth(image, self.mouth, target[list(T.UPPER_INNER)], target[list(T.LOWER_INNER)],
                           relax=float(weights[self._relax]))
