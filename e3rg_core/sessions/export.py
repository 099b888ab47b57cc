"""A conversation as one zip file the user can keep: ``session.json`` plus the turns' media."""

from __future__ import annotations

import json
import logging
import os
import uuid
import zipfile
from pathlib import Path

from e3rg_core.errors import BackendFailed
from e3rg_core.sessions.records import Session, info_to_dict, record_to_dict, utc_now

logger = logging.getLogger(__name__)

EXPORT_FORMAT = "e3rg-session"
EXPORT_VERSION = 1


def write_export(session: Session, out_path: Path) -> Path:
    """Write ``session`` to ``out_path`` (a zip file, or an existing folder); return the zip's path.

    Layout: ``session.json`` (format, format_version, exported_at, session info, every turn with its
    record and its media as paths inside the zip) and ``media/<turn index, 3 digits>/<key><suffix>``.
    The zip is written under a temporary name beside the target and renamed into place.
    """
    out_path = out_path.expanduser()
    if out_path.is_dir():
        out_path = out_path / f"e3rg-session-{session.info.id}.zip"
    files: list[tuple[Path, str]] = []
    turns = []
    for turn in session.turns:
        refs = {}
        for key, path in turn.media.items():
            if not path.is_file():
                # a concurrent replace_last_turn, or a file deleted by hand: export what exists
                logger.warning("session %s turn %d: media %s is missing; not exported",
                               session.info.id, turn.index, path)
                continue
            refs[key] = f"media/{turn.index:03d}/{key}{path.suffix}"
            files.append((path, refs[key]))
        turns.append({"index": turn.index, "id": turn.id, "created_at": turn.created_at,
                      "record": record_to_dict(turn.record), "media": refs})
    document = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "exported_at": utc_now(),
                "session": info_to_dict(session.info), "turns": turns}

    tmp_path = out_path.with_name(f".{out_path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(tmp_path, "w") as archive:
            archive.writestr("session.json", json.dumps(document, ensure_ascii=False, indent=2),
                             compress_type=zipfile.ZIP_DEFLATED)
            for path, name in files:
                archive.write(path, name, compress_type=zipfile.ZIP_STORED)  # audio and video barely compress
        os.replace(tmp_path, out_path)
    except OSError as exc:
        tmp_path.unlink(missing_ok=True)
        raise BackendFailed(f"cannot write the export of session {session.info.id} to {out_path}: {exc}") from exc
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return out_path
