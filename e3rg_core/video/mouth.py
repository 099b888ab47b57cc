"""The inside of the mouth, painted between the inner lip contours when the mouth opens wider than
in the portrait (or than in the relaxed portrait, when the ``relax`` unit has closed its lips).

What a viewer expects to see in an opening mouth, top to bottom: the upper teeth hanging from the
upper lip (in the lip's shadow at first), a dark cavity, and the tongue once the jaw is well open. Whatever the portrait already showed between its lips (a smile's teeth)
stays attached to the upper lip, so an open-mouthed portrait keeps its own teeth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from e3rg_core.video import topology as T

_TEETH_RGB = np.array([232.0, 226.0, 212.0])
_CAVITY_RGB = np.array([46.0, 14.0, 18.0])
_TONGUE_RGB = np.array([150.0, 66.0, 70.0])


@dataclass(frozen=True)
class MouthModel:
    """What is needed to paint one portrait's mouth interior."""

    rest_upper: np.ndarray  # [11, 2] rest upper inner lip, left to right
    rest_lower: np.ndarray  # [11, 2]
    relaxed_upper: np.ndarray  # [11, 2] the same lips with the ``relax`` unit at 1
    relaxed_lower: np.ndarray  # [11, 2]
    iod_px: float
    teeth_rgb: np.ndarray  # [3]
    cavity_rgb: np.ndarray  # [3]
    original: np.ndarray  # the portrait, for the interior it already shows


def _column_curve(contour: np.ndarray, xs: np.ndarray) -> np.ndarray:
    order = np.argsort(contour[:, 0])
    return np.interp(xs, contour[order, 0], contour[order, 1])


def mouth_model(image: np.ndarray, points: np.ndarray, iod_px: float, *,
                relaxed: np.ndarray | None = None) -> MouthModel:
    """Measure the portrait's lips once: rest contours and a cavity colour matched to the lips.

    ``relaxed`` ``[468, 2]``: where the mesh points go with the ``relax`` unit at 1 (default: nowhere).
    """
    upper = points[list(T.UPPER_INNER), :2].astype(np.float64)
    lower = points[list(T.LOWER_INNER), :2].astype(np.float64)
    moved = points[:, :2].astype(np.float64) if relaxed is None else np.asarray(relaxed, dtype=np.float64)
    lips = points[list(T.UPPER_OUTER + T.LOWER_OUTER), :2].astype(int)
    h, w = image.shape[:2]
    samples = image[np.clip(lips[:, 1], 0, h - 1), np.clip(lips[:, 0], 0, w - 1)].astype(np.float64)
    lip_rgb = np.median(samples, axis=0)
    # the cavity is a deep shade of the lip colour; the teeth are tinted by the portrait's light
    cavity = 0.55 * _CAVITY_RGB + 0.45 * lip_rgb * 0.22
    light = np.clip(np.median(image.reshape(-1, 3), axis=0) / 160.0, 0.75, 1.1)
    teeth = np.clip(_TEETH_RGB * (0.85 + 0.15 * light / light.mean()), 0, 255)
    return MouthModel(rest_upper=upper, rest_lower=lower, relaxed_upper=moved[list(T.UPPER_INNER)],
                      relaxed_lower=moved[list(T.LOWER_INNER)], iod_px=float(iod_px), teeth_rgb=teeth,
                      cavity_rgb=cavity, original=image)


def paint_mouth(frame: np.ndarray, model: MouthModel, upper: np.ndarray, lower: np.ndarray, *,
                relax: float = 0.0) -> np.ndarray:
    """Paint the interior between the target inner lip contours ``upper`` / ``lower`` ``[11, 2]`` in place.

    ``relax`` (0..1): the weight of the ``relax`` unit in this frame; the mouth counts as opened by
    how far it is wider than the lips it relaxed to.
    """
    iod = model.iod_px
    corners_x = np.sort([upper[0, 0], upper[-1, 0]])
    x0 = int(np.floor(corners_x[0])) - 1
    x1 = int(np.ceil(corners_x[1])) + 2
    y0 = int(np.floor(min(upper[:, 1].min(), lower[:, 1].min()))) - 1
    y1 = int(np.ceil(max(upper[:, 1].max(), lower[:, 1].max()))) + 2
    h, w = frame.shape[:2]
    x0, x1, y0, y1 = max(x0, 0), min(x1, w), max(y0, 0), min(y1, h)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return frame
    xs = np.arange(x0, x1, dtype=np.float64)
    top = _column_curve(upper, xs)
    bottom = _column_curve(lower, xs)
    gap = np.clip(bottom - top, 0.0, None)
    rest_gap = np.clip(_column_curve(model.rest_lower, xs) - _column_curve(model.rest_upper, xs), 0.0, None)
    relaxed_gap = np.clip(_column_curve(model.relaxed_lower, xs) - _column_curve(model.relaxed_upper, xs), 0.0, None)
    relax = float(np.clip(relax, 0.0, 1.0))
    extra = gap - ((1.0 - relax) * rest_gap + relax * relaxed_gap)
    # painted only where clearly wider than at rest: a slight parting shows the lips' own seam
    fade = np.clip((extra - 0.015 * iod) / max(2.0, 0.03 * iod), 0.0, 1.0)
    if fade.max() <= 0.0:
        return frame
    ys = np.arange(y0, y1, dtype=np.float64)[:, None]
    # reach a little under the lower lip's inner edge: its rim in the portrait is often teeth
    reach = bottom + 0.012 * iod * fade
    inside = np.clip(ys - top + 0.5, 0, 1) * np.clip((reach - ys) / 1.5 + 0.5, 0, 1)
    alpha = inside * fade[None, :]

    width = max(corners_x[1] - corners_x[0], 1.0)
    u = np.clip((xs - corners_x.mean()) / (width / 2), -1, 1)[None, :]  # -1..1 across the mouth
    depth = ys - top  # pixels below the upper lip
    v = np.clip(depth / np.maximum(gap, 1.0), 0, 1)  # 0 at the upper lip, 1 at the lower lip
    side_shade = 0.35 + 0.65 * np.cos(np.pi / 2 * np.abs(u)) ** 0.8

    # darkest deep in the middle, where the throat is; lighter towards the lips
    throat = np.exp(-(u / 0.5) ** 2 - ((v - 0.45) / 0.35) ** 2)
    colour = model.cavity_rgb * (1.0 - 0.45 * throat)[..., None]
    # tongue: a soft mound at the bottom, visible once the jaw is well open
    tongue = np.clip((v - 0.5) / 0.35, 0, 1) * np.clip(1 - np.abs(u) / 0.8, 0, 1) * np.clip((gap - 0.08 * iod) / (0.08 * iod), 0, 1)
    colour += (0.85 * tongue * side_shade)[..., None] * (_TONGUE_RGB * 0.7 - colour)
    # upper teeth from the upper lip down (the lower teeth stay hidden behind the lower lip); a mouth
    # barely parted shows only the shadow behind the lips, not a line of teeth
    teeth_h = np.minimum(0.38 * gap, 0.10 * iod) * np.clip((gap - 0.025 * iod) / (0.03 * iod), 0, 1)
    upper_teeth = np.clip(teeth_h - depth + 0.5, 0, 1) * np.clip(1 - np.abs(u) / 0.92, 0, 1) ** 0.5
    lip_shadow = 0.62 + 0.38 * np.clip(depth / max(0.035 * iod, 1.0), 0, 1)  # the upper lip shades the teeth
    tooth_light = (side_shade * lip_shadow)[..., None] * model.teeth_rgb
    colour += upper_teeth[..., None] * (tooth_light - colour)
    # a slightly open mouth shows the lower teeth's edge, in the lower lip's shadow
    low_h = np.minimum(0.3 * gap, 0.05 * iod) * np.clip(1.2 - gap / (0.3 * iod), 0, 1)
    lower_teeth = np.clip(low_h - (bottom - ys) + 0.5, 0, 1) * np.clip(1 - np.abs(u) / 0.75, 0, 1)
    low_shade = 0.45 + 0.25 * np.clip((bottom - ys) / np.maximum(low_h, 1.0), 0, 1)
    colour += (0.9 * lower_teeth)[..., None] * (tooth_light * low_shade[..., None] - colour)

    # whatever the portrait showed between its lips (a smile's teeth) hangs from the upper lip; once
    # relaxed, only as far down as teeth would show in a mouth opened from closed
    if rest_gap.max() > 1.0:
        lift = top - _column_curve(model.rest_upper, xs)
        shape = (len(ys), len(xs))
        src_y = np.clip(np.round(np.broadcast_to(ys - lift, shape)).astype(int), 0, h - 1)
        src_x = np.broadcast_to(np.arange(x0, x1), shape)
        shown = (1.0 - relax) * rest_gap + relax * np.minimum(rest_gap, teeth_h)
        kept = np.clip(shown - depth + 0.5, 0, 1)
        colour += kept[..., None] * (model.original[src_y, src_x].astype(np.float64) - colour)

    region = frame[y0:y1, x0:x1].astype(np.float64)
    region += alpha[..., None] * (colour - region)
    frame[y0:y1, x0:x1] = np.clip(region + 0.5, 0, 255).astype(np.uint8)
    return frame
