"""A PNG of the mean scores: one group of bars per criterion, one bar per system, interval whiskers.

Drawn with Pillow (already a dependency; matplotlib is not one), colours from the Okabe-Ito palette,
which colour-blind readers can tell apart.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Sequence

from e3rg_core.errors import InputError
from e3rg_core.rating.analysis import Score
from e3rg_core.rating.criteria import SCALE
from e3rg_core.rating.study import Study

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_GROUP_W, _BAR_GAP, _LEFT, _RIGHT, _TOP, _BOTTOM, _PLOT_H = 170, 6, 64, 24, 64, 70, 300


def plot_scores(scores: Sequence[Score], study: Study, out_path: Path) -> Path:
    """Draw ``scores`` (from ``summarize``) as grouped bars with whiskers; write a PNG to ``out_path``."""
    from PIL import Image, ImageDraw, ImageFont

    if not scores:
        raise InputError("no scores to plot: the study has no ratings yet")
    systems = [s for s in study.systems if any(x.system == s for x in scores)]
    criteria = [c for c in study.criteria if any(x.criterion == c.id for x in scores)]
    width = _LEFT + _GROUP_W * len(criteria) + _RIGHT
    height = _TOP + _PLOT_H + _BOTTOM
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    font, small = ImageFont.load_default(size=14), ImageFont.load_default(size=11)
    lo, hi = SCALE[0], SCALE[-1]
    y_of = lambda v: _TOP + _PLOT_H * (hi - v) / (hi - lo)  # noqa: E731 - the y axis, scores lo..hi

    method = scores[0].method
    title = study.title or study.id
    draw.text((_LEFT, 10), f"{title}: mean score, 95 % interval ({'t' if method == 't' else 'bootstrap over items'})",
              fill="black", font=font)
    for v in SCALE:
        y = y_of(v)
        draw.line([(_LEFT, y), (width - _RIGHT, y)], fill="#dddddd")
        draw.text((_LEFT - 18, y - 7), str(v), fill="black", font=font)
    draw.line([(_LEFT, _TOP), (_LEFT, _TOP + _PLOT_H)], fill="black")

    by_key = {(s.system, s.criterion): s for s in scores}
    bar_w = (_GROUP_W - 30 - _BAR_GAP * (len(systems) - 1)) / max(len(systems), 1)
    for g, criterion in enumerate(criteria):
        x0 = _LEFT + g * _GROUP_W + 15
        for k, system in enumerate(systems):
            score = by_key.get((system, criterion.id))
            if score is None or not math.isfinite(score.mean):
                continue
            left = x0 + k * (bar_w + _BAR_GAP)
            colour = PALETTE[k % len(PALETTE)]
            draw.rectangle([left, y_of(score.mean), left + bar_w, y_of(lo)], fill=colour)
            centre = left + bar_w / 2
            if math.isfinite(score.ci_low) and math.isfinite(score.ci_high):
                top, bottom = y_of(min(score.ci_high, hi)), y_of(max(score.ci_low, lo))
                draw.line([(centre, top), (centre, bottom)], fill="black", width=2)
                for y in (top, bottom):
                    draw.line([(centre - 5, y), (centre + 5, y)], fill="black", width=2)
            if y_of(lo) - y_of(score.mean) >= 20:  # the value inside the bar's foot, clear of the whisker
                draw.text((centre, y_of(lo) - 4), f"{score.mean:.2f}", fill="white", font=small, anchor="mb")
            else:
                draw.text((centre, y_of(score.mean) - 14), f"{score.mean:.2f}", fill="black", font=small, anchor="mb")
        label = "\n".join(textwrap.wrap(criterion.name, 22))
        draw.multiline_text((x0 + (_GROUP_W - 30) / 2, _TOP + _PLOT_H + 8), label, fill="black", font=font,
                            anchor="ma", align="center")

    x = _LEFT
    for k, system in enumerate(systems):
        draw.rectangle([x, 36, x + 14, 50], fill=PALETTE[k % len(PALETTE)])
        draw.text((x + 20, 36), system, fill="black", font=font)
        x += 30 + draw.textlength(system, font=font)

    out_path = Path(out_path)
    image.save(out_path, format="PNG")
    return out_path
