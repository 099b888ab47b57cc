"""``python -m e3rg_core avatars``: the operator's view of the custom avatars in the data directory.

    python -m e3rg_core avatars list                # every custom avatar: id, name, owner, published
    python -m e3rg_core avatars publish ID          # show it in every visitor's gallery
    python -m e3rg_core avatars unpublish ID        # back to its owner alone
    python -m e3rg_core avatars delete ID           # remove its portrait, voice sample and profile

A custom avatar belongs to whoever made it (``e3rg_core.memory.ownership``); publishing is the one
way to give it to everybody, and it is an operator's act, not a visitor's. The voice sample stays
unserved either way.
"""

from __future__ import annotations

import argparse
import json


def _library(args: argparse.Namespace):
    from e3rg_core.config import load_config
    from e3rg_core.memory import AvatarLibrary

    config = load_config(args.config)
    return AvatarLibrary(user_root=config.data_dir / "avatars")  # as the app (ChatService) opens it


def _list(args: argparse.Namespace) -> int:
    from e3rg_core.memory.ownership import read_owner

    library = _library(args)
    rows = []
    for avatar_id in library.custom_ids():
        access = read_owner(library.user_root / avatar_id)
        try:
            name = library.get(avatar_id).display_name
        except Exception as exc:  # noqa: BLE001 - a broken avatar is listed, with why
            name = f"(broken: {exc})"
        owner = access.owner if not access.owner.startswith("\x00") else "(unreadable owner.json)"
        rows.append({"id": avatar_id, "name": name, "owner": owner or "(shared)", "published": access.published})
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    elif not rows:
        print(f"no custom avatars in {library.user_root}")
    else:
        for row in rows:
            print(f"{row['id']:<40} {row['name']:<24} {'published' if row['published'] else 'private':<10} "
                  f"{row['owner']}")
    return 0


def _publish(args: argparse.Namespace) -> int:
    from e3rg_core.memory.ownership import set_published

    set_published(_library(args), args.id, args.action == "publish")
    print(f"{args.id} is now {'shown to every visitor' if args.action == 'publish' else 'its owner’s alone'}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    from e3rg_core.errors import InputError

    library = _library(args)
    if args.id not in library.custom_ids():
        raise InputError(f"no custom avatar {args.id!r}; `python -m e3rg_core avatars list` shows them")
    library.delete_custom(args.id)
    print(f"deleted {args.id}: its portrait, voice sample and profile")
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    """Register ``avatars`` on the main parser's subcommands."""
    parser = sub.add_parser("avatars", help="list, publish or delete the users' custom avatars",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every custom avatar with its owner and whether it is published")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    listing.set_defaults(func=_list)
    for action, text in (("publish", "show a custom avatar in every visitor's gallery"),
                         ("unpublish", "take a published avatar back to its owner alone")):
        one = actions.add_parser(action, help=text)
        one.add_argument("id", help="the avatar's id (see `avatars list`)")
        one.set_defaults(func=_publish)
    delete = actions.add_parser("delete", help="remove a custom avatar: portrait, voice sample, profile")
    delete.add_argument("id", help="the avatar's id (see `avatars list`)")
    delete.set_defaults(func=_delete)
