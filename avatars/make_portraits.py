"""Paint the shipped avatars' portraits with code: faces of no one, frontal, neutral and evenly lit.

    python avatars/make_portraits.py [--only ID] [--out DIR]

Each face is a height field (head, brow ridge, eye sockets, nose, cheeks, lips, chin, and for an
older face its folds and lines) lit by a soft key light from the upper left and a fill from the
right, over an albedo map (skin tone, a little blush and mottling, lips), with painted eyes, brows,
hair, neck and clothes. Every number below is this script's own; nothing is traced from a photo, so
the portraits show no real person and are released with the code (see each avatar's LICENSE.md).
The output is deterministic: the same script writes the same PNGs byte for byte.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.ndimage import gaussian_filter

SIZE_PX = 1024
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Face:
    """The few choices that make one face differ from another."""

    avatar_id: str
    seed: int
    skin: tuple[float, float, float]  # linear-ish albedo, 0..1
    hair: tuple[float, float, float]
    iris: tuple[float, float, float]
    shirt: tuple[float, float, float]
    background: tuple[float, float, float]
    age: float  # 0 young .. 1 old: folds, lines, thinner lips, heavier lids
    jaw: float  # half-width of the jaw as a fraction of the cheek half-width
    lips: float  # lip fullness, 0.6 .. 1.3
    brow_px: float  # brow thickness
    hair_style: str  # "long", "short", "bald_sides", "bun", "curls"
    nose_width: float = 1.0
    beard: float = 0.0  # 0 none .. 1 a short grey-white beard
    exposure: float = 1.0  # the key light's strength: darker skin is lit brighter, as a photographer would
    lid: float = 1.0  # how far the upper lid opens (1: its top 0.09 IOD above the eye's centre)
    brow: tuple[float, float, float] | None = None  # the brows' colour when not a darker shade of the hair


FACES = (
    Face("amara", seed=11, skin=(0.36, 0.22, 0.15), hair=(0.05, 0.04, 0.035), iris=(0.16, 0.09, 0.05),
         shirt=(0.55, 0.38, 0.12), background=(0.62, 0.66, 0.70), age=0.0, jaw=0.78, lips=1.25,
         brow_px=10.0, hair_style="curls", nose_width=1.12, exposure=1.35),
    Face("daniel", seed=23, skin=(0.78, 0.60, 0.50), hair=(0.28, 0.20, 0.13), iris=(0.25, 0.35, 0.45),
         shirt=(0.20, 0.28, 0.42), background=(0.70, 0.70, 0.68), age=0.3, jaw=0.85, lips=0.85,
         brow_px=12.0, hair_style="short", lid=0.85),
    Face("rosa", seed=37, skin=(0.80, 0.64, 0.56), hair=(0.80, 0.79, 0.77), iris=(0.30, 0.22, 0.14),
         shirt=(0.45, 0.22, 0.30), background=(0.66, 0.70, 0.66), age=0.7, jaw=0.8, lips=0.7,
         brow_px=7.0, hair_style="bun"),
    Face("kofi", seed=41, skin=(0.30, 0.19, 0.13), hair=(0.72, 0.71, 0.70), iris=(0.13, 0.08, 0.05),
         shirt=(0.30, 0.36, 0.30), background=(0.68, 0.66, 0.62), age=0.9, jaw=0.82, lips=1.05,
         brow_px=11.0, hair_style="bald_sides", nose_width=1.15, beard=0.8, exposure=1.4,
         brow=(0.12, 0.11, 0.10)),
)

# the layout every face shares (pixels of the 1024 canvas): eye centres, then the rest from them
CX = 512.0
EYE_Y = 468.0
IOD = 204.0  # distance between the eye centres


def _grid() -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[0:SIZE_PX, 0:SIZE_PX].astype(np.float64)
    return x, y


def _smooth(edge: np.ndarray, width: float) -> np.ndarray:
    """0 outside, 1 inside, for a signed distance (positive inside) and a soft edge in pixels."""
    return np.clip(0.5 + edge / width, 0.0, 1.0)


def _bump(x, y, x0, y0, sx, sy, rot=0.0):
    c, s = np.cos(rot), np.sin(rot)
    u = ((x - x0) * c + (y - y0) * s) / sx
    v = (-(x - x0) * s + (y - y0) * c) / sy
    return np.exp(-0.5 * (u * u + v * v))


def _half_width(y: np.ndarray, face: Face) -> np.ndarray:
    """The face outline's half-width at each row (0 above the crown and below the chin)."""
    cheek = 1.17 * IOD
    top, chin = EYE_Y - 1.55 * IOD, EYE_Y + 1.78 * IOD
    t = (y - top) / (EYE_Y + 0.1 * IOD - top)  # crown .. cheekbone
    upper = cheek * np.sqrt(np.clip(1 - (1 - np.clip(t, 0, 1)) ** 2.2, 0, 1))
    s = np.clip((y - (EYE_Y + 0.1 * IOD)) / (chin - (EYE_Y + 0.1 * IOD)), 0, 1)  # cheekbone .. chin
    # a superellipse from the cheekbones to a rounded chin, narrowed towards the jaw by face.jaw
    lower = cheek * np.clip(1 - s ** 3.2, 0, 1) ** 0.42 * (1 - (1 - face.jaw) * s)
    w = np.where(y < EYE_Y + 0.1 * IOD, upper, lower)
    return np.where((y < top) | (y > chin), 0.0, w)


def _height(face: Face, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The head's height field and its mask (1 on the skin of the head)."""
    hw = _half_width(y, face)
    u = np.where(hw > 0, (x - CX) / np.maximum(hw, 1e-6), 9.0)
    mask = np.where(hw > 0, _smooth((1 - np.abs(u)) * hw, 1.5), 0.0)
    z = 0.9 * IOD * np.sqrt(np.clip(1 - u * u, 0, 1)) ** 0.8
    for ex in (CX - IOD / 2, CX + IOD / 2):
        side = np.sign(ex - CX)
        z -= 26 * _bump(x, y, ex, EYE_Y + 2, 0.27 * IOD, 0.2 * IOD)  # eye socket
        z += 14 * _bump(x, y, ex + side * 8, EYE_Y - 0.27 * IOD, 0.36 * IOD, 0.09 * IOD)  # brow ridge
        z += 16 * _bump(x, y, ex + side * 0.2 * IOD, EYE_Y + 0.55 * IOD, 0.32 * IOD, 0.22 * IOD)  # cheek
        z += 10 * face.age * _bump(x, y, ex, EYE_Y + 0.24 * IOD, 0.22 * IOD, 0.05 * IOD)  # bag under the eye
        z -= 7 * face.age * _bump(x, y, ex, EYE_Y + 0.33 * IOD, 0.22 * IOD, 0.035 * IOD)
        # the fold from the nose wing to the mouth corner, deeper with age
        for k in range(12):
            t = k / 11
            fx = CX + side * (0.27 * IOD + 0.09 * IOD * t)
            fy = EYE_Y + 0.72 * IOD + 0.45 * IOD * t
            z -= (3 + 9 * face.age) * (1 - 0.5 * t) * _bump(x, y, fx, fy, 0.035 * IOD, 0.06 * IOD) * 0.35
        for k in range(3 if face.age > 0.5 else 0):  # crow's feet
            z -= 3.5 * _bump(x, y, ex + side * 0.39 * IOD, EYE_Y - 0.05 * IOD + k * 0.1 * IOD, 0.06 * IOD, 0.012 * IOD,
                             rot=side * (0.35 - 0.3 * k))
    # nose: a ridge growing to the tip, the wings, the columella
    t = np.clip((y - (EYE_Y - 0.05 * IOD)) / (0.75 * IOD), 0, 1.15)
    ridge_w = (0.07 + 0.07 * t) * IOD * face.nose_width
    z += 50 * t ** 0.8 * np.exp(-0.5 * ((x - CX) / ridge_w) ** 2) * (y < EYE_Y + 0.86 * IOD) \
        * _smooth(EYE_Y + 0.86 * IOD - y, 10)
    z += 30 * _bump(x, y, CX, EYE_Y + 0.74 * IOD, 0.12 * IOD * face.nose_width, 0.09 * IOD)
    for side in (-1, 1):
        z += 18 * _bump(x, y, CX + side * 0.16 * IOD * face.nose_width, EYE_Y + 0.78 * IOD, 0.07 * IOD, 0.07 * IOD)
    z -= 6 * _bump(x, y, CX, EYE_Y + 0.98 * IOD, 0.04 * IOD, 0.1 * IOD)  # philtrum
    # lips: upper and lower, the seam between
    mouth_y = EYE_Y + 1.12 * IOD
    half_mouth = 0.4 * IOD
    z += 9 * face.lips * _bump(x, y, CX, mouth_y - 0.05 * IOD, half_mouth * 0.8, 0.05 * IOD * face.lips)
    z += 11 * face.lips * _bump(x, y, CX, mouth_y + 0.08 * IOD * face.lips, half_mouth * 0.7, 0.065 * IOD * face.lips)
    z -= 5 * _bump(x, y, CX, mouth_y + 0.28 * IOD, 0.2 * IOD, 0.05 * IOD)  # below the lip
    z += 14 * _bump(x, y, CX, EYE_Y + 1.55 * IOD, 0.22 * IOD, 0.12 * IOD)  # chin
    for k in range(4 if face.age > 0.3 else 0):  # forehead lines
        z -= 2.2 * face.age * _bump(x, y, CX, EYE_Y - (0.62 + 0.13 * k) * IOD, 0.5 * IOD, 0.012 * IOD)
    return z * mask, mask


def _normals(z: np.ndarray) -> np.ndarray:
    gy, gx = np.gradient(gaussian_filter(z, 1.2))
    n = np.stack([-gx, -gy, np.ones_like(z)], axis=-1)
    return n / np.linalg.norm(n, axis=-1, keepdims=True)


def _shade(normals: np.ndarray, albedo: np.ndarray, occlusion: np.ndarray, exposure: float) -> np.ndarray:
    key = np.array([-0.35, -0.45, 0.82])
    fill = np.array([0.5, -0.1, 0.86])
    key, fill = key / np.linalg.norm(key), fill / np.linalg.norm(fill)
    k = np.clip((normals @ key + 0.25) / 1.25, 0, 1)  # wrapped light: soft skin shadows
    f = np.clip(normals @ fill, 0, 1)
    light = (0.22 + 0.75 * k + 0.25 * f) * exposure
    # a little red in the half-shadows, as light scattered under the skin
    warm = np.stack([np.ones_like(k), 0.9 + 0.1 * k, 0.85 + 0.15 * k], axis=-1)
    return albedo * light[..., None] * warm * occlusion[..., None]


def _noise(rng: np.random.Generator, sigma: float, shape=(SIZE_PX, SIZE_PX)) -> np.ndarray:
    n = gaussian_filter(rng.standard_normal(shape), sigma)
    return n / (n.std() + 1e-9)


def _eye(img, x, y, ex, face, rng):
    """An open, relaxed eye: sclera, iris under a slightly covering upper lid, lashes, crease."""
    half = 0.26 * IOD
    dx = (x - ex) / half
    # lid curves (y of the upper and lower lid at each column)
    upper = EYE_Y - 0.088 * IOD * face.lid * np.sqrt(np.clip(1 - dx ** 2, 0, 1)) * (1 - 0.05 * face.age)
    lower = EYE_Y + 0.07 * IOD * np.sqrt(np.clip(1 - dx ** 2, 0, 1))
    inside = _smooth(np.minimum(y - upper, lower - y), 1.4) * (np.abs(dx) < 1)
    r_iris = 0.115 * IOD
    dist = np.hypot(x - ex, y - (EYE_Y - 0.005 * IOD))
    sclera = np.array([0.86, 0.83, 0.80]) * (0.78 + 0.22 * np.clip(1 - np.abs(dx), 0, 1) ** 0.5)[..., None]
    sclera = sclera * (1 - 0.35 * _smooth(upper + 0.03 * IOD - y, 6))[..., None]  # the lid's shadow
    radial = 0.8 + 0.2 * _noise(rng, 1.0)[..., None] * 0.5
    iris = np.array(face.iris) * radial * (0.7 + 0.5 * np.clip(dist / r_iris, 0, 1))[..., None]
    iris = np.where((dist > 0.86 * r_iris)[..., None], iris * 0.55, iris)  # limbal ring
    pupil = _smooth(0.38 * r_iris - dist, 1.0)
    eye = sclera * (1 - _smooth(r_iris - dist, 1.2))[..., None] + iris * _smooth(r_iris - dist, 1.2)[..., None]
    eye = eye * (1 - pupil[..., None]) + 0.02 * pupil[..., None]
    glint = _smooth(0.09 * r_iris - np.hypot(x - ex + 0.3 * r_iris, y - EYE_Y + 0.35 * r_iris), 1.0)
    eye = eye + (0.95 - eye) * glint[..., None]
    img[:] = img * (1 - inside[..., None]) + eye * inside[..., None]
    # lash line along the upper lid, thicker outward; a thin lower line
    lash = _smooth(2.6 + 3.5 * np.clip(dx * np.sign(ex - CX), 0, 1) - np.abs(y - upper + 1.5), 1.2) * (np.abs(dx) < 1.04)
    img[:] = img * (1 - 0.85 * lash[..., None]) + 0.03 * lash[..., None]
    low = _smooth(1.2 - np.abs(y - lower - 0.5), 1.0) * (np.abs(dx) < 1.0)
    img[:] = img * (1 - 0.35 * low[..., None])
    crease = _smooth(1.5 - np.abs(y - (upper - 0.07 * IOD - 0.03 * IOD * face.age)), 2.0) * (np.abs(dx) < 0.9)
    img[:] = img * (1 - 0.25 * crease[..., None])


def _brow(img, x, y, ex, face, rng):
    """A relaxed brow: a gentle arch of short hairs, its inner end level with its outer."""
    side = np.sign(ex - CX)
    t = (x - (ex - side * 0.33 * IOD)) * side / (0.68 * IOD)  # 0 inner end .. 1 outer end
    arch = EYE_Y - 0.29 * IOD - 0.05 * IOD * np.sin(np.pi * np.clip(t * 0.85, 0, 1))
    thick = face.brow_px * (1.25 - 0.7 * np.clip(t, 0, 1))
    band = _smooth(thick - np.abs(y - arch), 2.0) * _smooth(np.minimum(t, 1 - t) * 60, 6)
    strands = np.clip(0.85 + 0.25 * gaussian_filter(rng.standard_normal(x.shape), (0.6, 2.5)) * 3, 0, 1)
    a = np.clip(band * strands * 0.9, 0, 1)
    colour = np.array(face.brow) if face.brow is not None else np.array(face.hair) * 0.7
    img[:] = img * (1 - a[..., None]) + colour * a[..., None]


def _mouth(albedo, x, y, face):
    mouth_y = EYE_Y + 1.12 * IOD
    half = 0.4 * IOD * (1 - 0.06 * face.age)
    dx = (x - CX) / half
    inside = np.abs(dx) < 1
    bow = 0.012 * IOD * np.exp(-((x - CX) / (0.09 * IOD)) ** 2)  # Cupid's bow dip
    up_top = mouth_y - (0.1 * IOD * face.lips) * np.sqrt(np.clip(1 - dx ** 2, 0, 1)) ** 0.7 + bow \
        - 0.02 * IOD * np.exp(-((np.abs(x - CX) - 0.1 * IOD) / (0.09 * IOD)) ** 2)
    lo_bottom = mouth_y + 0.135 * IOD * face.lips * np.sqrt(np.clip(1 - dx ** 2, 0, 1)) ** 0.8
    seam = mouth_y + 0.004 * IOD * dx ** 2
    lip = _smooth(np.minimum(y - up_top, lo_bottom - y), 1.8) * inside
    tone = np.array(face.skin) * np.array([0.86, 0.64, 0.64]) + np.array([0.05, 0.0, 0.005])
    albedo[:] = albedo * (1 - lip[..., None]) + tone * lip[..., None]
    return seam, half


def portrait(face: Face) -> np.ndarray:
    """One face as an RGB uint8 array of SIZE_PX x SIZE_PX."""
    rng = np.random.default_rng(face.seed)
    x, y = _grid()
    skin = np.array(face.skin)
    bg = np.array(face.background) * (0.85 + 0.15 * (1 - y / SIZE_PX))[..., None]
    bg = bg * (1 + 0.04 * _noise(rng, 40)[..., None])
    img = bg.copy()

    # neck and shoulders, then the clothes over them
    neck_w = 0.62 * IOD * (1.08 if face.jaw > 0.85 else 1.0)
    neck = _smooth(neck_w - np.abs(x - CX), 2) * (y > EYE_Y + 1.2 * IOD)
    nz = np.sqrt(np.clip(1 - ((x - CX) / neck_w) ** 2, 0, 1))
    neck_shade = skin * face.exposure * (0.35 + 0.5 * nz ** 0.7)[..., None] * (0.55 + 0.45 * np.clip((y - EYE_Y - 1.8 * IOD) / (0.6 * IOD), 0, 1))[..., None]
    img = img * (1 - neck[..., None]) + neck_shade * neck[..., None]
    shoulder_top = EYE_Y + 2.45 * IOD + 0.0011 * (x - CX) ** 2
    collar = EYE_Y + 2.25 * IOD + 0.9 * np.sqrt(np.clip(neck_w ** 2 - (x - CX) ** 2, 0, None))
    cloth = _smooth(np.minimum(y - shoulder_top, y - np.minimum(collar, shoulder_top)), 2)
    cloth = np.maximum(cloth, _smooth(y - np.where(np.abs(x - CX) < neck_w, collar, shoulder_top), 2))
    fold = 0.85 + 0.15 * np.cos((x - CX) / 45.0) * np.exp(-((y - shoulder_top) / 200) ** 2)
    cloth_col = np.array(face.shirt) * fold[..., None] * (0.7 + 0.3 * np.clip(1 - np.abs(x - CX) / (3 * IOD), 0, 1))[..., None]
    img = img * (1 - cloth[..., None]) + cloth_col * cloth[..., None]

    # hair behind the head
    hair_col = np.array(face.hair)
    strands = 0.75 + 0.25 * np.clip(gaussian_filter(rng.standard_normal((SIZE_PX, SIZE_PX)), (6, 0.8)) * 6, -1, 1)
    crown_y = EYE_Y - 1.55 * IOD
    if face.hair_style == "long":
        back = _smooth(1.0 - np.hypot((x - CX) / (1.42 * IOD), (y - (EYE_Y + 0.2 * IOD)) / (2.1 * IOD)), 0.01)
        img = img * (1 - back[..., None]) + (hair_col * strands[..., None] * 0.8) * back[..., None]
    if face.hair_style == "curls":
        curls = 0.7 + 0.3 * np.clip(_noise(rng, 4.0) * 0.8, -1, 1)
        r = np.hypot((x - CX) / (1.62 * IOD), (y - (EYE_Y - 0.55 * IOD)) / (1.45 * IOD))
        edge = 1 + 0.04 * _noise(rng, 8.0)
        back = _smooth((edge - r) * 150, 3) * (y < EYE_Y + 0.5 * IOD)
        img = img * (1 - back[..., None]) + (hair_col + 0.02) * curls[..., None] * back[..., None]
    if face.hair_style == "bun":
        bun = _smooth(0.42 * IOD - np.hypot(x - CX, y - (crown_y - 0.12 * IOD)), 2)
        img = img * (1 - bun[..., None]) + hair_col * strands[..., None] * 0.75 * bun[..., None]

    # ears
    for side in (-1, 1):
        ear = _smooth(1 - np.hypot((x - CX - side * 1.16 * IOD) / (0.16 * IOD), (y - EYE_Y - 0.2 * IOD) / (0.36 * IOD)), 0.04)
        ear_col = skin * face.exposure * (0.55 + 0.25 * _bump(x, y, CX + side * 1.18 * IOD, EYE_Y + 0.1 * IOD, 0.06 * IOD, 0.2 * IOD))[..., None]
        img = img * (1 - ear[..., None]) + ear_col * ear[..., None]

    # the face: albedo, then lighting
    z, mask = _height(face, x, y)
    mottle = 1 + 0.03 * _noise(rng, 3.0)[..., None] + 0.02 * _noise(rng, 0.7)[..., None]
    albedo = skin * mottle
    for side in (-1, 1):  # warmth on the cheeks and the nose tip
        blush = 0.07 * _bump(x, y, CX + side * 0.55 * IOD, EYE_Y + 0.6 * IOD, 0.22 * IOD, 0.16 * IOD)
        albedo = albedo * (1 + blush[..., None] * np.array([0.6, -0.3, -0.3]))
    albedo = albedo * (1 + 0.05 * _bump(x, y, CX, EYE_Y + 0.75 * IOD, 0.1 * IOD, 0.08 * IOD)[..., None]
                       * np.array([0.5, -0.2, -0.2]))
    seam, half_mouth = _mouth(albedo, x, y, face)
    if face.beard > 0:
        stub = np.clip(0.55 + 0.35 * _noise(rng, 0.6), 0, 1)
        jaw_band = _smooth(y - (EYE_Y + 1.0 * IOD) - 0.18 * np.abs(x - CX), 12)
        lips_clear = 1 - _smooth(0.42 * IOD - np.hypot((x - CX) / 1.0, (y - (EYE_Y + 1.14 * IOD)) * 3.2), 6)
        moustache = _smooth(0.44 * IOD - np.hypot(x - CX, (y - (EYE_Y + 0.98 * IOD)) * 4.5), 6)
        area = np.maximum(jaw_band * lips_clear, moustache) * mask
        a = np.clip(area * stub * face.beard * 0.85, 0, 1)
        albedo = albedo * (1 - a[..., None]) + np.array(face.hair) * 0.9 * a[..., None]
    occlusion = np.ones_like(x)
    nostrils = np.zeros_like(x)
    for side in (-1, 1):
        nostrils += _bump(x, y, CX + side * 0.085 * IOD * face.nose_width, EYE_Y + 0.82 * IOD, 0.04 * IOD, 0.018 * IOD, rot=side * 0.3)
    occlusion = occlusion * (1 - 0.7 * np.clip(nostrils, 0, 1))
    shaded = _shade(_normals(z), albedo, occlusion, face.exposure)
    seam_line = _smooth(1.6 - np.abs(y - seam), 1.0) * (np.abs(x - CX) < half_mouth * 1.02)
    shaded = shaded * (1 - 0.6 * seam_line[..., None])
    img = img * (1 - mask[..., None]) + shaded * mask[..., None]

    for ex in (CX - IOD / 2, CX + IOD / 2):
        _eye(img, x, y, ex, face, rng)
        _brow(img, x, y, ex, face, rng)

    # hair in front: a cap above a hairline that curves down to the temples, and the sides
    hw = _half_width(y, face)
    head = _smooth(1.0 - np.hypot((x - CX) / (1.26 * IOD), (y - (EYE_Y - 0.5 * IOD)) / (1.16 * IOD)), 0.012)
    hair_line = EYE_Y - (0.95 + 0.1 * face.age) * IOD + 0.0022 * (x - CX) ** 2
    top_light = 0.75 + 0.45 * np.clip(1 - np.hypot(x - CX + 0.5 * IOD, y - crown_y) / (1.4 * IOD), 0, 1)
    if face.hair_style in ("short", "long", "bun"):
        low = {"short": EYE_Y + 0.05 * IOD, "bun": EYE_Y + 0.25 * IOD, "long": EYE_Y + 0.6 * IOD}[face.hair_style]
        sides = _smooth(np.abs(x - CX) - (hw - 0.1 * IOD), 4) * _smooth(low - y, 20)
        cap = head * np.maximum(_smooth(hair_line - y, 5), sides)
        if face.hair_style == "long":
            fall = _smooth(np.abs(x - CX) - (hw - 0.08 * IOD), 4) * (y > EYE_Y - 0.5 * IOD) \
                * _smooth(1.0 - np.hypot((x - CX) / (1.38 * IOD), (y - (EYE_Y + 0.2 * IOD)) / (2.05 * IOD)), 0.01)
            cap = np.maximum(cap, fall)
        img = img * (1 - cap[..., None]) + hair_col * (strands * top_light)[..., None] * cap[..., None]
    if face.hair_style == "curls":
        r = np.hypot((x - CX) / (1.62 * IOD), (y - (EYE_Y - 0.55 * IOD)) / (1.45 * IOD))
        edge = 1 + 0.04 * _noise(np.random.default_rng(face.seed + 1), 8.0)
        line = EYE_Y - 0.98 * IOD + 0.0016 * (x - CX) ** 2
        front = _smooth((edge - r) * 150, 3) * np.maximum(_smooth(line - y, 6),
                                                          _smooth(np.abs(x - CX) - (hw - 0.06 * IOD), 6) * _smooth(EYE_Y + 0.1 * IOD - y, 20))
        curls = 0.7 + 0.3 * np.clip(_noise(np.random.default_rng(face.seed + 2), 4.0) * 0.8, -1, 1)
        img = img * (1 - front[..., None]) + (hair_col + 0.02) * curls[..., None] * front[..., None]
    if face.hair_style == "bald_sides":
        band = _smooth(np.minimum(np.abs(x - CX) - (hw - 0.14 * IOD), hw + 0.03 * IOD - np.abs(x - CX)), 5) \
            * _smooth(np.minimum(y - (EYE_Y - 0.75 * IOD), EYE_Y + 0.15 * IOD - y), 25)
        a = np.clip(band * (0.55 + 0.45 * strands), 0, 1) * 0.92
        img = img * (1 - a[..., None]) + hair_col * a[..., None]
    return (np.clip(img, 0, 1) ** (1 / 1.15) * 255 + 0.5).astype(np.uint8)


def main() -> None:
    from PIL import Image

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="one avatar id")
    parser.add_argument("--out", type=Path, default=HERE, help="folder holding one folder per avatar")
    args = parser.parse_args()
    for face in FACES:
        if args.only and face.avatar_id != args.only:
            continue
        dest = args.out / face.avatar_id / "portrait.png"
        dest.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(portrait(face)).save(dest, optimize=True)
        print(dest)


if __name__ == "__main__":
    main()
