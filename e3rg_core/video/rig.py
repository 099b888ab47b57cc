"""The face rig: how each action unit moves the 468 mesh points of one portrait.

Each unit is a field of displacement vectors over the mesh, built once per portrait from its rest
landmarks in a *face frame* (origin between the eyes, x along the eye line, y down, unit = the
inter-ocular distance). At weight 1 a length-type unit moves its strongest point by one
inter-ocular distance, so the emotion bank's numbers read as "fractions of the eye distance";
``eye_open`` and ``lower_lid`` are in fractions of the eye's own opening, so ``eye_open = -1`` closes it.

A frame's pose is a weight per unit; ``Rig.displace`` turns weights into moved points (linear, fast).
Head motion (pitch, yaw, roll, shift) is applied after, using the mesh's depth for a small 3-D feel.

One unit is measured rather than drawn: ``relax`` takes the portrait's own mouth expression away (a
smile's parted lips and raised corners, a mouth caught talking), so that emotions start from a
closed, level mouth whatever the photo shows; it is nothing on a photo that already has one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from e3rg_core.video import topology as T

#: units driven by speech
SPEECH_UNITS = ("jaw_open", "lip_round", "lip_spread", "lip_press", "lip_tuck")
#: units driven by the life track
LIFE_UNITS = ("blink",)
#: units driven by the emotion bank (``jaw_open``, ``lip_round`` and ``lip_press`` are shared with speech)
EMOTION_UNITS = ("brow_raise", "brow_inner_raise", "brow_squeeze", "eye_open", "lower_lid", "cheek_raise",
                 "corner_up", "corner_stretch", "smirk", "upper_lip_raise", "nose_wrinkle", "chin_raise", "jaw_open",
                 "lip_round", "lip_press", "relax")
UNITS: tuple[str, ...] = tuple(dict.fromkeys(SPEECH_UNITS + EMOTION_UNITS + LIFE_UNITS))
_RELAX = UNITS.index("relax")
HEAD_AXES = ("pitch", "yaw", "roll", "shift_x", "shift_y")  # radians, radians, radians, IOD, IOD


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _gauss(q: np.ndarray, centre: np.ndarray, sigma: float) -> np.ndarray:
    return np.exp(-np.sum((q - centre) ** 2, axis=-1) / (2.0 * sigma * sigma))


def _inside(polygon: np.ndarray, point: np.ndarray) -> bool:
    import cv2

    return cv2.pointPolygonTest(polygon, (float(point[0]), float(point[1])), True) >= -0.5


def _contour_y(q: np.ndarray, contour: tuple[int, ...], x: np.ndarray) -> np.ndarray:
    """Height of a (left-to-right) contour at positions ``x``, held flat beyond its ends."""
    xs, ys = q[list(contour), 0], q[list(contour), 1]
    order = np.argsort(xs)
    return np.interp(x, xs[order], ys[order])


_PARTED = 0.005  # eye distances: relaxed lips are left this far apart, not folded onto each other
_UPPER_SHARE = 0.45  # of a parting, what the upper lip gives up in relaxing; the jaw closes the rest
_MOST_PARTED = 0.3  # wider partings (a laugh) are relaxed only this far


def _corner_patch(q: np.ndarray, corner: np.ndarray, *, below: float = 0.5) -> np.ndarray:
    """How much each point follows a mouth corner: the lips fully, the skin below them ``below`` as much."""
    reach = np.exp(-((q[:, 0] - corner[0]) / 0.17) ** 2 / 2 - ((q[:, 1] - corner[1]) / 0.3) ** 2 / 2)
    return reach * (1.0 - (1.0 - below) * _smoothstep((q[:, 1] - corner[1] - 0.1) / 0.3))


def _press_and_tuck(q: np.ndarray, upper_lip: np.ndarray, lower_lip: np.ndarray,
                    free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertical fields of ``lip_press`` and ``lip_tuck`` for the lips of the mesh ``q`` (face frame).

    Pressing closes the gap (the lips meet at the seam, points in the gap collapse onto it, nothing
    crosses) and thins both lips; tucking (/f/, /v/) rolls the lower lip up to the upper teeth and
    the upper lip gives way a little. Thinning moves each lip point by its depth into the lip, so a
    lip pressed twice over (an emotion's and a viseme's) gets thinner without folding.
    """
    x, y = q[:, 0], q[:, 1]
    top, bottom = _contour_y(q, T.UPPER_INNER, x), _contour_y(q, T.LOWER_INNER, x)
    into_upper = np.clip((top - y) / np.maximum(top - _contour_y(q, T.UPPER_OUTER, x), 1e-6), 0.0, 1.0)
    into_lower = np.clip((y - bottom) / np.maximum(_contour_y(q, T.LOWER_OUTER, x) - bottom, 1e-6), 0.0, 1.0)
    middle = (top + bottom) / 2
    gap_half = np.clip((bottom - top) / 2, 0.0, None)
    press = upper_lip * np.clip(middle - y, 0.0, gap_half) + lower_lip * np.clip(middle - y, -gap_half, 0.0)
    press += (0.012 * upper_lip * into_upper - 0.015 * lower_lip * into_lower) * free
    tuck = lower_lip * np.clip(top - y, -2 * gap_half, 0.0) + upper_lip * (np.minimum(top - y, 0.0) - 0.01 * free)
    tuck -= 0.03 * lower_lip * into_lower * free
    return press, tuck


def _chin_raise(q: np.ndarray, mouth_cx: float, half_width: float) -> np.ndarray:
    """The ``chin_raise`` unit (vertical): the chin pushes the lower lip up against the upper one.

    The middle of the mouth rises while the corners hold (the pout of sadness, the bunched chin of
    doubt and disgust). Both inner lip edges move alike, so closed lips stay closed; the upper lip
    gives way less towards the nose, the chin less towards its tip.
    """
    x, y = q[:, 0], q[:, 1]
    top = _contour_y(q, T.UPPER_INNER, x)
    outer_top = _contour_y(q, T.UPPER_OUTER, x)
    outer_bottom = _contour_y(q, T.LOWER_OUTER, x)
    lip_top_y = float(q[list(T.UPPER_OUTER), 1].min())
    chin_y = float(q[T.CHIN, 1])
    rise = np.where(y >= top,
                    1.0 - 0.45 * _smoothstep((y - outer_bottom) / max(chin_y - lip_top_y, 1e-6)),
                    1.0 - 0.3 * _smoothstep((top - y) / np.maximum(top - outer_top, 1e-6))
                    - 0.7 * _smoothstep((outer_top - y) / 0.2))
    corners = q[list(T.MOUTH_CORNERS)]
    hold = np.maximum(_gauss(q, corners[0], 0.4 * half_width), _gauss(q, corners[1], 0.4 * half_width))
    middle_only = np.exp(-((x - mouth_cx) ** 2) / (2 * (0.7 * half_width) ** 2)) * (1.0 - hold)
    return -np.clip(rise, 0.0, 1.0) * middle_only


def _relax_field(q: np.ndarray, top: np.ndarray, bottom: np.ndarray, corners: np.ndarray,
                 mouth_cx: float) -> np.ndarray:
    """The ``relax`` unit: the lips brought together and the corners level with the seam.

    Measured on the portrait's own mesh, so it is nothing on a closed, level mouth and undoes a
    smile's parted lips and raised corners (or a talking mouth) on another: at weight 1 the inner
    lips are ``_PARTED`` apart, the upper lip having come down ``_UPPER_SHARE`` of the way and the
    jaw (lower lip, chin) up the rest; then both corners move, with their patch of skin, to the
    height of the middle of the seam.
    """
    x, y = q[:, 0], q[:, 1]
    excess = np.clip(bottom - top - _PARTED, 0.0, _MOST_PARTED)
    down, up = _UPPER_SHARE * excess, (1.0 - _UPPER_SHARE) * excess
    outer_top = _contour_y(q, T.UPPER_OUTER, x)
    outer_bottom = _contour_y(q, T.LOWER_OUTER, x)
    # the jaw closes as one piece: below the lower lip the lift widens into the chin's
    chin_up = up.max() * np.exp(-((x - mouth_cx) ** 2) / (2 * 0.85 ** 2))
    span = np.maximum(bottom - top, 1e-6)
    dy = np.where(y <= top, down * _smoothstep(1.0 - (outer_top - y) / 0.15),
                  np.where(y < bottom, down - (down + up) * (y - top) / span,
                           -(up + (chin_up - up) * _smoothstep((y - outer_bottom) / 0.3))))
    field = np.stack([np.zeros_like(dy), dy], axis=1)
    centre = np.array([mouth_cx])
    top_c, bottom_c = _contour_y(q, T.UPPER_INNER, centre)[0], _contour_y(q, T.LOWER_INNER, centre)[0]
    parted = float(np.clip(bottom_c - top_c - _PARTED, 0.0, _MOST_PARTED))
    seam = (top_c + _UPPER_SHARE * parted + bottom_c - (1.0 - _UPPER_SHARE) * parted) / 2  # where the lips meet
    for k, corner in enumerate(corners):
        lower_by = seam - corner[1]  # > 0: the corner is raised (a smile) and comes down
        outward = -1.0 if k == 0 else 1.0
        # a corner brought down takes the skin below it along (a smile had stretched that skin)
        field += _corner_patch(q, corner, below=1.0)[:, None] * lower_by * np.array([-0.35 * outward, 1.0])
    return field


@dataclass(frozen=True)
class Rig:
    """Per-portrait unit fields and the face frame."""

    rest: np.ndarray  # [468, 2] pixels
    depth: np.ndarray  # [468] pixels, smaller = nearer the camera
    units: np.ndarray  # [n_units, 468, 2] pixels per unit weight
    origin: np.ndarray  # [2] pixels: between the eyes
    axes: np.ndarray  # [2, 2] columns: face x and y directions (unit vectors), in pixels
    iod_px: float
    pivot: np.ndarray  # [2] pixels: the neck, the centre of head roll
    helpers: np.ndarray  # [k, 2] pixels: extra warp points under the lower lids (see build_rig)
    helper_parents: np.ndarray  # [k] the mesh point each helper follows, except in a blink
    relaxed: np.ndarray  # [n_units, 468, 2] how a unit's field differs on the relaxed mouth (press, tuck, chin)

    def displace(self, weights: np.ndarray) -> np.ndarray:
        """Rest points moved by unit weights ``[n_units]`` -> ``[468, 2]``.

        The units add up, except that pressing, tucking and raising the chin act on the lips where
        ``relax`` has put them (a closed mouth has no gap left to press shut).
        """
        moved = self.rest + np.tensordot(weights, self.units, axes=1)
        relax = float(np.clip(weights[_RELAX], 0.0, 1.0))
        if relax > 0.0:
            moved += relax * np.tensordot(weights, self.relaxed, axes=1)
        return moved

    def displace_helpers(self, weights: np.ndarray) -> np.ndarray:
        """The helper points: they move with their lid point in everything but a blink."""
        still = weights.copy()
        still[UNITS.index("blink")] = 0.0
        return self.helpers + np.tensordot(still, self.units[:, self.helper_parents], axes=1)

    def head(self, points: np.ndarray, pose: np.ndarray, depth: np.ndarray | None = None) -> np.ndarray:
        """Apply a head pose ``[pitch, yaw, roll, shift_x, shift_y]`` to points ``[n, 2]``."""
        pitch, yaw, roll, shift_x, shift_y = pose
        z = self.depth if depth is None else depth
        # turning the head moves near points (nose) more than far ones (cheek edges)
        # turning about an axis behind the face: near points (the nose) travel further than the edges
        lever = (self.axis_depth - z)[:, None]
        moved = points + lever * (self.axes @ np.array([yaw, pitch]))[None, :]
        cos, sin = np.cos(roll), np.sin(roll)
        rot = np.array([[cos, -sin], [sin, cos]])
        moved = (moved - self.pivot) @ rot.T + self.pivot
        return moved + self.axes @ np.array([shift_x, shift_y]) * self.iod_px

    @property
    def axis_depth(self) -> float:
        """Depth (pixels) of the head's turning axis, about one eye distance behind the cheeks."""
        return float(np.median(self.depth[list(T.FACE_OVAL)]) + 0.9 * self.iod_px)


def build_rig(points: np.ndarray) -> Rig:
    """Build the unit fields of a portrait from its rest mesh ``[468, 3]``."""
    rest = points[:, :2].astype(np.float64)
    left_eye, right_eye = T.eye_centres(points)
    iod = float(np.linalg.norm(right_eye - left_eye))
    ex = (right_eye - left_eye) / iod
    ey = np.array([-ex[1], ex[0]])
    axes = np.stack([ex, ey], axis=1)
    origin = (left_eye + right_eye) / 2
    q = (rest - origin) @ axes / iod  # face frame
    n = len(q)
    fields: dict[str, np.ndarray] = {name: np.zeros((n, 2)) for name in UNITS}

    # -- mouth geometry ------------------------------------------------------------------
    corners = q[list(T.MOUTH_CORNERS)]
    mouth_cx = float(corners[:, 0].mean())
    half_width = float(abs(corners[1, 0] - corners[0, 0]) / 2)
    seam = (_contour_y(q, T.UPPER_INNER, q[:, 0]) + _contour_y(q, T.LOWER_INNER, q[:, 0])) / 2
    beyond = np.clip(np.abs(q[:, 0] - mouth_cx) - half_width, 0.0, None)
    seam = seam - 0.45 * beyond  # beyond the corners the jaw line rises towards the ears
    # the lips: every point inside the outer lip outline, split by the seam; corners belong to neither
    outline = rest[list(T.UPPER_OUTER + T.LOWER_OUTER[-2:0:-1])].astype(np.float32).reshape(-1, 1, 2)
    in_lips = np.array([_inside(outline, p) for p in rest])
    corner_ids = list(T.MOUTH_CORNERS + (78, 308))
    upper_side = q[:, 1] < seam
    upper_lip = (in_lips & upper_side).astype(float)
    lower_lip = (in_lips & ~upper_side).astype(float)
    upper_lip[list(T.UPPER_INNER + T.UPPER_OUTER)] = 1.0
    lower_lip[list(T.UPPER_INNER + T.UPPER_OUTER)] = 0.0
    lower_lip[list(T.LOWER_INNER + T.LOWER_OUTER)] = 1.0
    upper_lip[list(T.LOWER_INNER + T.LOWER_OUTER)] = 0.0
    upper_lip[corner_ids] = 0.0
    lower_lip[corner_ids] = 0.0
    lower = _smoothstep((q[:, 1] - seam) / 0.16 + 0.5)
    lower[upper_lip > 0] = 0.0
    lower[lower_lip > 0] = 1.0
    lower[corner_ids] = 0.5
    # a flat-topped patch over the mouth: rounding and spreading move it as one piece (no folds)
    mouth_cy = float(seam[list(T.UPPER_INNER)].mean())
    lip_zone = np.exp(-(np.abs(q[:, 0] - mouth_cx) / (1.35 * half_width)) ** 4 - (np.abs(q[:, 1] - mouth_cy) / 0.32) ** 4)
    side = np.clip((q[:, 0] - mouth_cx) / max(half_width, 1e-6), -1.3, 1.3)  # -1 left corner, +1 right

    # jaw_open: the lower jaw swings down; the chin travels a little further than the lip
    lateral = np.exp(-((q[:, 0] - mouth_cx) ** 2) / (2 * 0.85 ** 2))
    chin_extra = 1.0 + 0.35 * np.clip(q[:, 1] - seam, 0.0, 1.0)
    # the corners hold the lips together, so they part in a lens while the chin drops freely
    hold = np.maximum(_gauss(q, corners[0], 0.4 * half_width), _gauss(q, corners[1], 0.4 * half_width))
    jaw = fields["jaw_open"]
    jaw[:, 1] = 0.27 * lower * lateral * chin_extra * (1.0 - 0.75 * hold)  # 17 mm at the loudest "aa"
    jaw[:, 1] -= 0.035 * upper_lip * np.exp(-side ** 2)  # the upper lip lifts slightly
    jaw[:, 0] -= 0.03 * np.sign(side) * np.exp(-(np.abs(side) - 1) ** 2 / 0.1) * lip_zone  # corners draw in

    # rounding pulls the lips towards the centre and pushes them out (more lip shows)
    rnd = fields["lip_round"]
    rnd[:, 0] = -0.10 * side * lip_zone
    rnd[:, 1] = (-0.03 * upper_lip + 0.035 * lower_lip) * (1.0 - hold)
    spread = fields["lip_spread"]
    spread[:, 0] = 0.08 * side * lip_zone
    spread[:, 1] = -0.015 * lip_zone * np.abs(side) + (0.01 * upper_lip - 0.012 * lower_lip) * (1.0 - hold)
    top = _contour_y(q, T.UPPER_INNER, q[:, 0])
    bottom = _contour_y(q, T.LOWER_INNER, q[:, 0])
    free = 1.0 - hold
    press, tuck = _press_and_tuck(q, upper_lip, lower_lip, free)
    fields["lip_press"][:, 1], fields["lip_tuck"][:, 1] = press, tuck

    # relax: the portrait's own mouth expression taken away (a smile's parted lips and raised corners,
    # a talking mouth), measured on this mesh; pressing and tucking then work on the closed mouth
    relax = _relax_field(q, top, bottom, corners, mouth_cx)
    fields["relax"] = relax
    moved = q + relax  # the relaxed mouth: pressing, tucking and the chin act on it when relax is on
    relaxed_press, relaxed_tuck = _press_and_tuck(moved, upper_lip, lower_lip, free)
    fields["chin_raise"][:, 1] = _chin_raise(q, mouth_cx, half_width)
    relaxed = {name: np.zeros((n, 2)) for name in UNITS}
    relaxed["lip_press"][:, 1] = relaxed_press - press
    relaxed["lip_tuck"][:, 1] = relaxed_tuck - tuck
    relaxed["chin_raise"][:, 1] = _chin_raise(moved, mouth_cx, half_width) - fields["chin_raise"][:, 1]

    # -- eyes and brows ------------------------------------------------------------------
    helpers: list[np.ndarray] = []
    helper_parents: list[int] = []
    brows = q[list(T.LEFT_BROW + T.RIGHT_BROW)]
    brow_y = float(brows[:, 1].mean())
    for upper, lower_lid, brow, inner in (
        (T.LEFT_EYE_UPPER, T.LEFT_EYE_LOWER, T.LEFT_BROW, T.LEFT_BROW_INNER),
        (T.RIGHT_EYE_UPPER, T.RIGHT_EYE_LOWER, T.RIGHT_BROW, T.RIGHT_BROW_INNER),
    ):
        xs = q[list(upper), 0]
        x_lo, x_hi = float(xs.min()), float(xs.max())
        centre_x = (x_lo + x_hi) / 2
        half = (x_hi - x_lo) / 2
        y_up = _contour_y(q, upper, q[:, 0])
        y_low = _contour_y(q, lower_lid, q[:, 0])
        aperture = np.clip(y_low - y_up, 0.0, None)
        across = np.clip(1.0 - (np.abs(q[:, 0] - centre_x) - half) / (0.35 * half), 0.0, 1.0)  # 1 over the eye
        # upper lid: full at the lid, fading to nothing at the brow; nothing at or below the lower lid
        above = np.clip((y_up - q[:, 1]) / max(1e-6, (y_up.mean() - brow_y) * 0.8), 0.0, 1.0)
        on_lid = np.where(q[:, 1] <= y_up + 1e-6, 1.0 - above, 0.0)
        on_lid[list(upper)] = 1.0
        on_lid[list(lower_lid)] = 0.0
        fields["eye_open"][:, 1] -= aperture * on_lid * across * np.where(q[:, 1] < y_low - 1e-6, 1.0, 0.0)
        fields["eye_open"][[upper[0], upper[-1]], 1] = 0.0  # corners stay
        # the mesh puts the lower lid contour on the white of the eye, a little above the real lid:
        # a blink closes both lids onto a line just below it (the helper points), so that strip of
        # white is squeezed out of sight
        widest = max(float(aperture.max()), 1e-6)
        below_lid = 0.3 * widest * np.sqrt(np.clip(aperture / widest, 0.0, 1.0))  # none at the corners
        lid_line = aperture * on_lid * across * np.where(q[:, 1] < y_low - 1e-6, 1.0, 0.0)
        fields["blink"][:, 1] += lid_line + below_lid * on_lid * across
        inner_low = list(lower_lid[1:-1])
        fields["blink"][inner_low, 1] = below_lid[inner_low]
        helpers.append(q[inner_low] + np.stack([np.zeros(len(inner_low)), below_lid[inner_low]], axis=1))
        helper_parents.extend(lower_lid[1:-1])
        fields["blink"][[upper[0], upper[-1]], 1] = 0.0
        below = np.clip((q[:, 1] - y_low) / 0.30, 0.0, 1.0)
        on_low = np.where(q[:, 1] >= y_low - 1e-6, 1.0 - below, 0.0)
        on_low[list(lower_lid)] = 1.0
        on_low[list(upper)] = 0.0
        fields["lower_lid"][:, 1] -= aperture.mean() * 0.9 * on_low * across
        fields["lower_lid"][[lower_lid[0], lower_lid[-1]], 1] = 0.0
        # brows: a soft patch around the brow, stronger above the eye than on the lid
        brow_pts = q[list(brow)]
        dist = np.min(np.linalg.norm(q[:, None, :] - brow_pts[None, :, :], axis=-1), axis=1)
        near = np.exp(-dist ** 2 / (2 * 0.16 ** 2)) * _smoothstep((y_up + 0.02 - q[:, 1]) / 0.18)
        near = np.maximum(near, np.isin(np.arange(n), brow).astype(float))
        fields["brow_raise"][:, 1] -= near
        inner_x = float(q[list(inner), 0].mean())
        innerness = np.clip(1.0 - np.abs(q[:, 0] - inner_x) / 0.45, 0.0, 1.0)
        fields["brow_inner_raise"][:, 1] -= near * innerness
        fields["brow_squeeze"][:, 0] -= np.sign(inner_x) * near * innerness ** 1.5
        fields["brow_squeeze"][:, 1] += 0.3 * near * innerness ** 1.5

        # cheeks push up under the eye (happy, disgusted)
        cheek_centre = np.array([centre_x * 1.05, 0.62])
        fields["cheek_raise"][:, 1] -= _gauss(q, cheek_centre, 0.26) * (1.0 - lip_zone)

    # -- mouth corners and the nose ------------------------------------------------------
    for k, index in enumerate(T.MOUTH_CORNERS):
        corner = q[index]
        outward = -1.0 if k == 0 else 1.0
        # the lips move together; the skin below them follows less
        patch = _corner_patch(q, corner)
        fields["corner_up"][:, 0] += 0.35 * outward * patch
        fields["corner_up"][:, 1] -= patch
        fields["corner_stretch"][:, 0] += outward * patch
        fields["corner_stretch"][:, 1] += 0.2 * patch
        if k == 1:  # contempt raises one corner, on the image's right
            fields["smirk"][:, 0] += 0.5 * outward * patch
            fields["smirk"][:, 1] -= patch
    nose_base = q[list(T.NOSE_ALAE)].mean(axis=0)
    lip_top = q[list(T.UPPER_OUTER)].mean(axis=0)
    patch = _gauss(q, (nose_base + lip_top) / 2, 0.22) * (1.0 - lower)
    fields["upper_lip_raise"][:, 1] -= np.maximum(patch, upper_lip * np.exp(-side ** 2 / 0.6))
    wrinkle = _gauss(q, nose_base + np.array([0.0, -0.12]), 0.2) * (1.0 - lower)
    fields["nose_wrinkle"][:, 1] -= wrinkle
    units = np.stack([fields[name] @ axes.T * iod for name in UNITS])
    relaxed_units = np.stack([relaxed[name] @ axes.T * iod for name in UNITS])
    chin = rest[T.CHIN]
    pivot = chin + (chin - origin) * 0.45
    helper_q = np.concatenate(helpers)
    return Rig(rest=rest, depth=points[:, 2].astype(np.float64), units=units, origin=origin, axes=axes,
               iod_px=iod, pivot=pivot, helpers=origin + helper_q @ axes.T * iod,
               helper_parents=np.array(helper_parents), relaxed=relaxed_units)
