"""Piecewise-affine image warp over a triangle mesh, fast enough for 100+ frames/s at 512x512 on CPU.

The mesh is the 468 face points plus two rings of anchors around the head and fixed points on the
frame border, triangulated once (Delaunay). Per frame only the target vertex positions change:

1. the moved triangles are rasterised into a triangle-index map at a reduced resolution
   (``map_scale``; the still background triangles are rasterised once);
2. each pixel of that map gets its triangle's target->source affine transform, giving a backward map;
3. the map is upsampled (bilinear, so seams stay smooth) and ``cv2.remap`` samples the portrait.

Because every frame is resampled from the untouched portrait, there is no drift, and triangles
outside the face blend the head's motion into the still background without tearing.
"""

from __future__ import annotations

import logging

import numpy as np

logger = logging.getLogger(__name__)

_SUBPIXEL_BITS = 4


def _signed_area(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1])) / 2


class TriangleWarp:
    """Warp one fixed image by moving the vertices of a triangulation of it."""

    def __init__(self, image: np.ndarray, vertices: np.ndarray, *, map_scale: float = 0.5,
                 still: np.ndarray | None = None, sharp: tuple[np.ndarray, ...] = ()) -> None:
        import cv2
        from scipy.spatial import Delaunay

        self._cv2 = cv2
        self.image = np.ascontiguousarray(image)
        self.height, self.width = image.shape[:2]
        self.rest = np.asarray(vertices, dtype=np.float64)
        self.triangles = Delaunay(self.rest).simplices.astype(np.int32)
        self.map_w = max(8, round(self.width * map_scale))
        self.map_h = max(8, round(self.height * map_scale))
        self._to_map = np.array([self.map_w / self.width, self.map_h / self.height])
        # centres of the map's pixels, in full-resolution pixel coordinates (remap convention)
        xs = (np.arange(self.map_w) + 0.5) / self._to_map[0] - 0.5
        ys = (np.arange(self.map_h) + 0.5) / self._to_map[1] - 0.5
        self._grid_x, self._grid_y = np.meshgrid(xs.astype(np.float32), ys.astype(np.float32))
        # triangles whose three vertices never move are drawn once into the base index map
        still_mask = np.zeros(len(self.rest), dtype=bool) if still is None else np.asarray(still, dtype=bool)
        fixed = still_mask[self.triangles].all(axis=1)
        self._moving = np.flatnonzero(~fixed)
        self._is_moving = ~fixed
        self._base = np.full((self.map_h, self.map_w), -1, dtype=np.int32)
        self._draw(self._base, self.rest, np.flatnonzero(fixed))
        self._orientation = np.sign(_signed_area(self.rest, self.triangles))
        self._rest_area = np.abs(_signed_area(self.rest, self.triangles))
        # regions (vertex index sets) whose map is recomputed at full resolution: where the mesh
        # folds content out of sight (closing eyelids), an upsampled map would let a line of it show
        self._sharp = tuple(np.asarray(region, dtype=int) for region in sharp)
        self._identity = np.tile(np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32), (len(self.triangles) + 1, 1, 1))

    def _draw(self, index_map: np.ndarray, vertices: np.ndarray, which: np.ndarray) -> None:
        """Rasterise triangles ``which`` of the mesh at ``vertices`` into ``index_map`` (value = triangle id)."""
        fill = self._cv2.fillConvexPoly
        scaled = np.round((vertices * self._to_map - 0.5) * (1 << _SUBPIXEL_BITS)).astype(np.int32)
        polys = scaled[self.triangles[which]]
        for tri_id, poly in zip(which.tolist(), polys):
            fill(index_map, poly, tri_id, lineType=self._cv2.LINE_8, shift=_SUBPIXEL_BITS)

    def backward_affines(self, target: np.ndarray) -> np.ndarray:
        """Per triangle, the 2x3 affine map from target positions back to rest positions."""
        tri_t = target[self.triangles]  # [T, 3, 2]
        tri_s = self.rest[self.triangles]
        ones = np.ones((len(self.triangles), 3, 1))
        lhs = np.concatenate([tri_t, ones], axis=2)  # rows [x, y, 1]
        det = np.linalg.det(lhs)
        good = np.abs(det) > 1e-6
        out = self._identity[:-1].astype(np.float64).copy()
        if good.any():
            solved = np.linalg.solve(lhs[good], tri_s[good])  # [G, 3, 2]
            out[good] = np.transpose(solved, (0, 2, 1))
        return out.astype(np.float32)

    def backward_map(self, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Full-resolution (map_x, map_y) for ``cv2.remap`` that moves the rest mesh onto ``target``."""
        cv2 = self._cv2
        index_map = self._base.copy()
        # a triangle turned over by the motion would paint a mirrored patch: leave it to its neighbours
        # and one squashed nearly flat (a closing lid) would smear its edge pixels far: skip it too
        area = _signed_area(target, self.triangles[self._moving]) * self._orientation[self._moving]
        upright = area > 0.15 * self._rest_area[self._moving]
        self._draw(index_map, target, self._moving[upright])
        affines = np.concatenate([self.backward_affines(target), self._identity[-1:]], axis=0)
        coeffs = affines[index_map]  # index -1 picks the trailing identity
        gx, gy = self._grid_x, self._grid_y
        small_x = coeffs[..., 0, 0] * gx + coeffs[..., 0, 1] * gy + coeffs[..., 0, 2]
        small_y = coeffs[..., 1, 0] * gx + coeffs[..., 1, 1] * gy + coeffs[..., 1, 2]
        size = (self.width, self.height)
        map_x = cv2.resize(small_x, size, interpolation=cv2.INTER_LINEAR)
        map_y = cv2.resize(small_y, size, interpolation=cv2.INTER_LINEAR)
        for region in self._sharp:
            self._sharpen(map_x, map_y, target, affines, region, upright)
        return map_x, map_y

    def _sharpen(self, map_x: np.ndarray, map_y: np.ndarray, target: np.ndarray, affines: np.ndarray,
                 region: np.ndarray, upright: np.ndarray, margin_px: int = 4) -> None:
        """Recompute the backward map at full resolution in the box around ``region``'s target points."""
        pts = target[region]
        x0, y0 = np.maximum(np.floor(pts.min(axis=0)).astype(int) - margin_px, 0)
        x1, y1 = np.minimum(np.ceil(pts.max(axis=0)).astype(int) + margin_px + 1, [self.width, self.height])
        if x1 <= x0 or y1 <= y0:
            return
        tri = target[self.triangles]
        lo, hi = tri.min(axis=1), tri.max(axis=1)
        near = (hi[:, 0] >= x0 - 1) & (lo[:, 0] <= x1) & (hi[:, 1] >= y0 - 1) & (lo[:, 1] <= y1)
        drawable = ~self._is_moving
        drawable[self._moving[upright]] = True
        which = np.flatnonzero(near & drawable)
        index_map = np.full((y1 - y0, x1 - x0), len(self.triangles), dtype=np.int32)
        shifted = np.round((target - [x0, y0]) * (1 << _SUBPIXEL_BITS)).astype(np.int32)
        fill = self._cv2.fillConvexPoly
        for tri_id, poly in zip(which.tolist(), shifted[self.triangles[which]]):
            fill(index_map, poly, tri_id, lineType=self._cv2.LINE_8, shift=_SUBPIXEL_BITS)
        gy, gx = np.mgrid[y0:y1, x0:x1].astype(np.float32)
        coeffs = affines[index_map]
        map_x[y0:y1, x0:x1] = coeffs[..., 0, 0] * gx + coeffs[..., 0, 1] * gy + coeffs[..., 0, 2]
        map_y[y0:y1, x0:x1] = coeffs[..., 1, 0] * gx + coeffs[..., 1, 1] * gy + coeffs[..., 1, 2]

    def warp(self, target: np.ndarray) -> np.ndarray:
        """The image with its mesh moved to ``target`` ``[n_vertices, 2]``."""
        map_x, map_y = self.backward_map(np.asarray(target, dtype=np.float64))
        return self._cv2.remap(self.image, map_x, map_y, self._cv2.INTER_LINEAR, borderMode=self._cv2.BORDER_REPLICATE)


def anchor_rings(points: np.ndarray, size_px: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Anchors around the face: an inner ring that moves with the head, an outer still ring, the frame border.

    Returns ``(inner [36, 2], outer [36, 2], border [m, 2])`` in pixels.
    """
    from e3rg_core.video import topology

    oval = points[list(topology.FACE_OVAL), :2].astype(np.float64)
    centre = oval.mean(axis=0)
    offset = oval - centre
    # more room above (hair) than below (the chin moves down over the neck)
    up = offset[:, 1] < 0
    inner = centre + offset * np.where(up, 1.3, 1.35)[:, None]
    outer = centre + offset * np.where(up, 2.0, 2.2)[:, None]
    step = size_px / 8
    ticks = np.arange(0, size_px + 1e-6, step) - 0.5
    ticks[-1] = size_px - 0.5
    border = np.concatenate([
        np.stack([ticks, np.full_like(ticks, -0.5)], 1), np.stack([ticks, np.full_like(ticks, size_px - 0.5)], 1),
        np.stack([np.full_like(ticks, -0.5), ticks], 1)[1:-1], np.stack([np.full_like(ticks, size_px - 0.5), ticks], 1)[1:-1],
    ])
    # border points inside the outer ring would pin the moving zone: drop them
    import cv2

    ring = outer.astype(np.float32).reshape(-1, 1, 2)
    keep = [cv2.pointPolygonTest(ring, (float(x), float(y)), True) < -step * 0.25 for x, y in border]
    return inner, outer, border[np.array(keep, dtype=bool)]
