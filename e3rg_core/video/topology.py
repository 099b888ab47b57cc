"""Named groups of the 468 MediaPipe face-mesh points used by the rig, the warp and the measurements.

"Left" and "right" are as seen in the image (the subject's right eye is on the image's left).
Contours run from one corner to the other, image-left first.
"""

from __future__ import annotations

import numpy as np

# lips: inner contours meet at the seam; the inner corners are 78 (left) and 308 (right)
UPPER_INNER = (78, 191, 80, 81, 82, 13, 312, 311, 310, 415, 308)
LOWER_INNER = (78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308)
UPPER_OUTER = (61, 185, 40, 39, 37, 0, 267, 269, 270, 409, 291)
LOWER_OUTER = (61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291)
MOUTH_CORNERS = (61, 291)
# the rings of the upper and lower lip between the outer and inner contours
UPPER_LIP_BODY = (76, 184, 74, 73, 72, 11, 302, 303, 304, 408, 306,
                  62, 183, 42, 41, 38, 12, 268, 271, 272, 407, 292)
LOWER_LIP_BODY = (77, 90, 180, 85, 16, 315, 404, 320, 307, 96, 89, 179, 86, 15, 316, 403, 319, 325)

# eyes: upper and lower lid contours from the outer/inner corner on the image left to the other
LEFT_EYE_UPPER = (33, 246, 161, 160, 159, 158, 157, 173, 133)
LEFT_EYE_LOWER = (33, 7, 163, 144, 145, 153, 154, 155, 133)
RIGHT_EYE_UPPER = (362, 398, 384, 385, 386, 387, 388, 466, 263)
RIGHT_EYE_LOWER = (362, 382, 381, 380, 374, 373, 390, 249, 263)

# brows: upper and lower edges; outer end first on the left brow, inner end first on the right
LEFT_BROW = (70, 63, 105, 66, 107, 46, 53, 52, 65, 55)
RIGHT_BROW = (336, 296, 334, 293, 300, 285, 295, 282, 283, 276)
LEFT_BROW_INNER = (107, 55, 66, 65)
RIGHT_BROW_INNER = (336, 285, 296, 295)

NOSE_TIP = 1
NOSE_BRIDGE = (168, 6, 197, 195, 5, 4)
NOSE_ALAE = (48, 64, 98, 278, 294, 327, 129, 358)
CHIN = 152
FOREHEAD = 10

# the face outline, clockwise from the top of the forehead
FACE_OVAL = (10, 338, 297, 332, 284, 251, 389, 356, 454, 323, 361, 288, 397, 365, 379, 378,
             400, 377, 152, 148, 176, 149, 150, 136, 172, 58, 132, 93, 234, 127, 162, 21,
             54, 103, 67, 109)


def eye_centres(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centres (x, y) of the image-left and image-right eyes from their corners."""
    left = (points[33, :2] + points[133, :2]) / 2
    right = (points[362, :2] + points[263, :2]) / 2
    return left, right


def interocular_px(points: np.ndarray) -> float:
    """Distance between the eye centres, the rig's unit of length."""
    left, right = eye_centres(points)
    return float(np.linalg.norm(right - left))
