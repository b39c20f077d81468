"""tfprof command-line option syntax: ``-max_depth 4 -select micros,bytes ...``.

Contract: :func:`parse_cli_options` turns the option part of a tfprof shell line (or an
argv list) into a dict of *overrides* with TF-style keys and Python values (ints,
strings, lists, bool, the ``-output`` string), ready for
:meth:`tfprof_lite.options.Options.updated` or :meth:`~tfprof_lite.options.Options.from_dict`.
It applies the validation of tfprof's interactive ``ParseCmdLine``
(``tensorflow/core/profiler/internal/tfprof_utils.cc``):

* numeric options must be decimal integers (surrounding ASCII whitespace and one
  ``+``/``-`` allowed); ``max_depth`` must fit a 32-bit int, the others 64 bits;
* ``-order_by`` must be one of :data:`~tfprof_lite.options.options.ORDER_BY_NAMES`;
* regex lists and ``-select`` are comma lists (empty items skipped) after all
  leading/trailing ``'`` and ``"`` characters are stripped; every ``-select`` item must
  be one of the 14 :data:`~tfprof_lite.options.options.SELECT_NAMES`; the result is
  sorted and de-duplicated;
* ``-account_displayed_op_only`` takes ``true/t/yes/y/1`` or ``false/f/no/n/0`` (any
  case); when it is last or followed by a piece starting with ``-`` it means true and
  consumes nothing;
* ``-output`` is parsed by :func:`~tfprof_lite.options.output.parse_output`.

Errors raise :class:`~tfprof_lite.errors.InvalidOptionError` with TF's text
``Invalid option '<opt>' value: '<val>'`` (``<val>`` is the following piece, or empty),
or :func:`parse_output`'s message for a bad ``-output``.

Beyond TF, options may be written ``--max_depth 4``, ``--max_depth=4``,
``--max-depth 4`` or ``-max_depth=4``. Deliberate differences from TF: the
``--account_type_regexes`` flag of TF's ``profiler`` binary sets the *start* regexes
(a bug) and its flag-mode ``--select``/``--order_by`` are not validated; here every form
behaves like the interactive shell. TF's shell also keeps the previous ``outfile`` when
``-output`` switches type (``-output file`` after ``timeline:outfile=x`` is accepted);
here ``-output`` always replaces the whole output spec.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.options.options import OPTION_NAMES, ORDER_BY_NAMES, SELECT_NAMES, Options
from tfprof_lite.options.output import parse_output

__all__ = [
    "COMMANDS",
    "apply_cli_options",
    "parse_bool",
    "parse_cli_options",
    "parse_command_line",
]

#: The tfprof shell's commands (``kCmds``).
COMMANDS: tuple[str, ...] = ("scope", "graph", "code", "op", "advise", "set", "help")

_ADOO = "account_displayed_op_only"
_REGEX_OPTIONS = frozenset(OPTION_NAMES[13:18])
_INT_BITS = {name: 64 for name in OPTION_NAMES[:12]} | {"max_depth": 32}
_OPTION_RE = re.compile(r"(--?)([A-Za-z][A-Za-z0-9_-]*)(?:=(.*))?", re.DOTALL)
_INT_RE = re.compile(r"[+-]?[0-9]+")
_ASCII_SPACE = " \t\n\v\f\r"
_TRUE = frozenset({"true", "t", "yes", "y", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "0"})


def _invalid(option: str, value: str | None) -> InvalidOptionError:
    return InvalidOptionError(f"Invalid option '{option}' value: '{value or ''}'")


def _pieces(args: str | Sequence[str]) -> list[str]:
    """Splits a line on single spaces like tfprof (empty pieces skipped); argv as is."""
    if isinstance(args, str):
        return [p for p in args.split(" ") if p]
    return list(args)


def parse_bool(text: str) -> bool | None:
    """Parses tfprof's boolean words, case-insensitively.

    Args:
        text: e.g. ``"Yes"`` or ``"0"``.

    Returns:
        True or False, or None if ``text`` is not a boolean word.
    """
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    return False if lowered in _FALSE else None


def _parse_int(text: str, bits: int) -> int | None:
    stripped = text.strip(_ASCII_SPACE)
    if not _INT_RE.fullmatch(stripped):
        return None
    number = int(stripped)
    limit = 2 ** (bits - 1)
    return number if -limit <= number < limit else None


def _split_list(text: str) -> list[str]:
    """Strips surrounding quote characters, then splits on ``,`` skipping empty items."""
    return [item for item in text.strip("'\"").split(",") if item]


def _parse_select(text: str) -> list[str] | None:
    requested = sorted(set(_split_list(text)))
    return requested if all(name in SELECT_NAMES for name in requested) else None


def _convert(name: str, written: str, text: str) -> Any:
    """Converts one option value; raises TF's error text when it is invalid."""
    value: Any
    if name in _INT_BITS:
        value = _parse_int(text, _INT_BITS[name])
    elif name == "order_by":
        value = text if text in ORDER_BY_NAMES else None
    elif name in _REGEX_OPTIONS:
        value = _split_list(text)
    elif name == "select":
        value = _parse_select(text)
    else:  # output
        parse_output(text)
        value = text
    if value is None:
        raise _invalid(written, text)
    return value


def _split_option(piece: str) -> tuple[str, str | None, str | None]:
    """Returns (option as written, canonical name or None, value after ``=`` or None)."""
    match = _OPTION_RE.fullmatch(piece)
    if match is None:
        return piece, None, None
    key = match[2].replace("-", "_")
    return match[1] + match[2], key if key in OPTION_NAMES else None, match[3]


def _adoo_value(written: str, attached: str | None, following: str | None) -> tuple[bool, int]:
    """Value of ``-account_displayed_op_only`` and how many extra pieces it used."""
    if attached is None and (following is None or following.startswith("-")):
        return True, 0
    text = attached if attached is not None else following
    value = parse_bool(text or "")
    if value is None:
        raise _invalid(written, text)
    return value, 0 if attached is not None else 1


def _parse_one(pieces: list[str], i: int, overrides: dict[str, Any]) -> int:
    """Parses the option at ``pieces[i]`` into ``overrides``; returns the next index."""
    written, name, attached = _split_option(pieces[i])
    following = pieces[i + 1] if i + 1 < len(pieces) else None
    if name is None:
        raise _invalid(written, attached if attached is not None else following)
    if name == _ADOO:
        overrides[name], used = _adoo_value(written, attached, following)
        return i + 1 + used
    if attached is not None:
        overrides[name] = _convert(name, written, attached)
        return i + 1
    if following is None:
        raise _invalid(written, "")
    overrides[name] = _convert(name, written, following)
    return i + 2


def parse_cli_options(args: str | Sequence[str]) -> dict[str, Any]:
    """Parses tfprof CLI options into a dict of overrides.

    Args:
        args: a string (split on spaces like the tfprof shell; no shell quoting) or an
            argv-style list (items used as they are, so values may contain spaces).

    Returns:
        TF-style keys mapped to values, in the order given; a repeated option keeps
        its last value. Example: ``parse_cli_options("-max_depth 4 -select
        micros,bytes")`` gives ``{"max_depth": 4, "select": ["bytes", "micros"]}``.

    Raises:
        InvalidOptionError: ``Invalid option '<opt>' value: '<val>'`` or an ``-output``
            error from :func:`parse_output`.
    """
    pieces = _pieces(args)
    overrides: dict[str, Any] = {}
    i = 0
    while i < len(pieces):
        i = _parse_one(pieces, i, overrides)
    return overrides


def parse_command_line(line: str) -> tuple[str, dict[str, Any]]:
    """Parses a whole tfprof shell line: a command followed by options.

    Args:
        line: e.g. ``"scope -max_depth 3 -select params"``.

    Returns:
        The command (one of :data:`COMMANDS`) and the option overrides.

    Raises:
        InvalidOptionError: ``First string must be a valid command.`` or any error of
            :func:`parse_cli_options`.
    """
    pieces = _pieces(line)
    if not pieces or pieces[0] not in COMMANDS:
        raise InvalidOptionError("First string must be a valid command.")
    return pieces[0], parse_cli_options(pieces[1:])


def apply_cli_options(base: Options, args: str | Sequence[str]) -> Options:
    """Overlays CLI options on ``base`` (what a tfprof shell command does).

    Args:
        base: the current default options.
        args: the options, as for :func:`parse_cli_options`.

    Returns:
        The combined, validated options (regexes are compiled here).
    """
    return base.updated(parse_cli_options(args))
