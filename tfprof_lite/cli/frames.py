"""``--user-code/--all-frames``: the code view's user-code mode on the command line.

Contract: :func:`frame_options` adds three options to a command:
``--user-code/--all-frames`` (default: the command's own), ``--user-include
REGEX`` and ``--user-exclude REGEX`` (repeatable; RE2 patterns full-matched
against a frame's file path or function name, see
:mod:`tfprof_lite.options.user_code`). :func:`user_code_from` turns them into
the value of ``Options.user_code``: None for ``--all-frames`` (tfprof's code
view), a :class:`~tfprof_lite.options.user_code.UserCode` otherwise. Giving a
pattern turns the mode on unless ``--all-frames`` is given too, which is a usage
error (exit 2), as is a pattern RE2 rejects. :func:`take_frame_flags` reads the
same flags from a ``tfprof-lite shell`` line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from tfprof_lite.cli.common import unknown_option
from tfprof_lite.errors import UsageError
from tfprof_lite.options.user_code import UserCode

__all__ = ["FrameFlags", "frame_options", "take_frame_flags", "user_code_from"]

_F = TypeVar("_F", bound=Callable[..., Any])


def frame_options(default_user_code: str) -> Callable[[_F], _F]:
    """Adds ``--user-code/--all-frames``, ``--user-include`` and ``--user-exclude``.

    Args:
        default_user_code: how the command's help states the default.
    """

    def decorate(func: _F) -> _F:
        func = click.option(
            "--user-exclude",
            "user_exclude",
            multiple=True,
            metavar="REGEX",
            help="Frames (file path or function, RE2) that count as library code.",
        )(func)
        func = click.option(
            "--user-include",
            "user_include",
            multiple=True,
            metavar="REGEX",
            help="Frames (file path or function, RE2) that count as user code even in "
            "site-packages or a framework.",
        )(func)
        return click.option(
            "--user-code/--all-frames",
            "user_code",
            default=None,
            help="Code view: fold TensorFlow/Keras/absl/stdlib/site-packages frames into "
            f"the user's own frames, or show every frame as tfprof does "
            f"(default: {default_user_code}).",
        )(func)

    return decorate


def user_code_from(
    flag: bool | None, include: tuple[str, ...], exclude: tuple[str, ...], default: bool
) -> UserCode | None:
    """``Options.user_code`` for the flags given (``default`` when neither flag is).

    Raises:
        UsageError: patterns with ``--all-frames``, or a pattern RE2 rejects.
    """
    patterns = bool(include or exclude)
    if flag is False and patterns:
        raise UsageError("--user-include/--user-exclude need --user-code, not --all-frames")
    on = flag if flag is not None else (default or patterns)
    if not on:
        return None
    rules = UserCode(include, exclude)
    bad = rules.invalid_pattern()
    if bad is not None:
        raise UsageError(f"invalid regular expression {bad[0]!r}: {bad[1]} (RE2 syntax)")
    return rules


#: ``--user-code``/``--all-frames`` (None: neither), include and exclude patterns.
FrameFlags = tuple[bool | None, tuple[str, ...], tuple[str, ...]]


def take_frame_flags(pieces: list[str]) -> tuple[list[str], FrameFlags]:
    """Takes ``code``'s ``--user-code/--all-frames`` and ``--user-include/--user-exclude
    REGEX`` out of a shell line's words (command first), as ``tfprof-lite code``
    takes them; returns the other words and the flags for :func:`user_code_from`.

    Raises:
        UsageError: such a flag after another command, or a pattern flag without
            its pattern.
    """
    flag: bool | None = None
    patterns: dict[str, list[str]] = {"--user-include": [], "--user-exclude": []}
    words = pieces[:1]
    i = 1
    while i < len(pieces):
        name, eq, value = pieces[i].partition("=")
        known = name in ("--user-code", "--all-frames") or name in patterns
        if known and pieces[0] != "code":
            raise unknown_option(name, {})  # as the command line says it
        if name in ("--user-code", "--all-frames") and not eq:
            flag = name == "--user-code"
        elif name in patterns:
            if not eq:
                if i + 1 >= len(pieces):
                    raise UsageError(f"Option '{name}' requires an argument.")
                i += 1
                value = pieces[i]
            patterns[name].append(value)
        else:
            words.append(pieces[i])
        i += 1
    return words, (flag, tuple(patterns["--user-include"]), tuple(patterns["--user-exclude"]))
