"""Who may see and use a custom avatar: its creator, or everybody once an operator publishes it.

A custom avatar's folder (under the library's ``user_root``) holds ``owner.json``::

    {"owner": "browser:3f9c...", "published": false}

``owner`` is the owner string of the app's access rules (``e3rg_core.ui.access``): a login name,
``browser:<id>`` for a visitor without a login, or ``""`` for the shared pool of
``ui.shared_conversations``. An avatar made before owners were recorded has no ``owner.json`` and
counts as the shared pool's. Shipped avatars are everybody's. ``published`` is set only by an
operator (``python -m e3rg_core avatars publish ID``): the avatar then shows in every gallery, but
only its owner may delete it through the app. The uploaded voice sample (``reference.wav``) is
never served to anybody, published or not: it only feeds a voice-cloning backend.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from e3rg_core.errors import InputError
from e3rg_core.memory.profiles import AvatarLibrary, Profile, check_avatar_id

logger = logging.getLogger(__name__)

OWNER_FILE = "owner.json"
MAX_OWNER_CHARS = 200


@dataclass(frozen=True)
class AvatarOwner:
    """Whose a custom avatar is, and whether an operator published it to everybody."""

    owner: str
    published: bool = False


def write_owner(folder: Path, access: AvatarOwner) -> None:
    """Write ``owner.json`` into an avatar folder (atomically: a reader never sees half of it)."""
    if not isinstance(access.owner, str) or len(access.owner) > MAX_OWNER_CHARS:
        raise InputError(f"an avatar's owner must be a string of at most {MAX_OWNER_CHARS} characters")
    path = Path(folder) / OWNER_FILE
    partial = path.with_name(f".{OWNER_FILE}.{uuid.uuid4().hex[:8]}")
    partial.write_text(json.dumps({"owner": access.owner, "published": bool(access.published)}), encoding="utf-8")
    os.replace(partial, path)


def read_owner(folder: Path) -> AvatarOwner:
    """The owner recorded in an avatar folder; none recorded (an older avatar) is the shared pool's.

    A file that cannot be read gives an owner nobody has, so a damaged file hides the avatar
    instead of showing it to everybody.
    """
    path = Path(folder) / OWNER_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return AvatarOwner("")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        logger.warning("%s cannot be read (%s); the avatar is hidden until it is fixed", path, exc)
        return AvatarOwner("\x00unreadable")
    if not isinstance(data, dict):
        data = {}
    owner, published = data.get("owner"), data.get("published", False)
    if not isinstance(owner, str) or not isinstance(published, bool):
        logger.warning("%s does not hold an owner string and a published flag; the avatar is hidden", path)
        return AvatarOwner("\x00unreadable")
    return AvatarOwner(owner, published)


def owner_of(library: AvatarLibrary, avatar_id: str) -> AvatarOwner | None:
    """The owner of a custom avatar; ``None`` for a shipped one (everybody's)."""
    check_avatar_id(avatar_id)
    if avatar_id not in library.custom_ids():
        if avatar_id in library.shipped_ids():
            return None
        raise InputError(f"no custom avatar {avatar_id!r}; the custom avatars are: "
                         f"{', '.join(library.custom_ids()) or '(none)'}")
    return read_owner(library.user_root / avatar_id)


def may_use(library: AvatarLibrary, avatar_id: str, owner: str) -> bool:
    """Whether ``owner`` may see and talk to avatar ``avatar_id``: shipped, published or their own."""
    if avatar_id in library.shipped_ids():
        return True
    if avatar_id not in library.custom_ids():
        return False
    access = read_owner(library.user_root / avatar_id)
    return access.published or access.owner == owner


def visible_profiles(library: AvatarLibrary, owner: str) -> tuple[Profile, ...]:
    """The avatars ``owner`` may see, sorted by id: the shipped ones, the published ones, their own."""
    return tuple(p for p in library.profiles() if may_use(library, p.id, owner))


def set_published(library: AvatarLibrary, avatar_id: str, published: bool) -> AvatarOwner:
    """Publish a custom avatar to everybody, or take it back to its owner alone (an operator's act)."""
    current = owner_of(library, avatar_id)
    if current is None:
        raise InputError(f"avatar {avatar_id!r} ships with e3rg and is everybody's already")
    if current.owner.startswith("\x00"):
        raise InputError(f"the owner file of avatar {avatar_id!r} cannot be read; fix or delete "
                         f"{library.user_root / avatar_id / OWNER_FILE} first")
    updated = AvatarOwner(current.owner, bool(published))
    write_owner(library.user_root / avatar_id, updated)
    logger.info("avatar %r is now %s", avatar_id, "published to everybody" if published else "its owner's alone")
    return updated


def delete_own(library: AvatarLibrary, avatar_id: str, owner: str) -> None:
    """Delete a custom avatar (portrait, voice sample, profile) if ``owner`` made it."""
    current = owner_of(library, avatar_id)
    if current is None:
        raise InputError(f"avatar {avatar_id!r} ships with e3rg and cannot be deleted; only avatars made by users can")
    if current.owner != owner:  # said the same whether or not the avatar exists for them
        raise InputError(f"you can delete only the avatars you made; {avatar_id!r} is not one of them")
    library.delete_custom(avatar_id)
