"""Regular expressions of the query options: RE2 full matches, linear time.

Contract: the five regex options (``account_type_regexes``, ``start_name_regexes``,
``trim_name_regexes``, ``show_name_regexes``, ``hide_name_regexes``) are RE2
patterns matched with :func:`full_match_any` (``RE2::FullMatch``, linear time).
A pattern RE2 rejects matches nothing, as in TF, with one logged warning naming
it when first used; :func:`regex_error` says why RE2 rejects it (the CLI refuses
such a pattern through :meth:`~tfprof_lite.options.options.Options.validate_strict`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from typing import Callable

import re2  # type: ignore[import-untyped]

__all__ = ["full_match_any", "full_match_many", "regex_error"]

log = logging.getLogger("tfprof_lite")

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a rejected pattern is reported once, by _warn_invalid
try:  # the binding's core object: a full match without the Python wrapper's overhead
    from re2 import _re2 as _re2_core

    _ANCHOR_BOTH = _re2_core.RE2.Anchor.ANCHOR_BOTH
except (ImportError, AttributeError):  # pragma: no cover - other binding layouts
    _re2_core = None

#: Patterns RE2 rejected -> RE2's reason; kept so the reason outlives the cache.
_REJECTED: dict[str, str] = {}
_WARNED: set[str] = set()
_NO_MATCH = (-1, -1)


def _re2_reason(err: Exception) -> str:
    """RE2's parse error text (the binding hands it over as bytes)."""
    reason = err.args[0] if err.args else err
    if isinstance(reason, bytes):
        return reason.decode("utf-8", "replace")
    return str(reason)


def _core_matcher(pattern: str) -> Callable[[bytes], bool]:
    """Full match of UTF-8 bytes through the binding's core ``RE2`` object."""
    regexp = _re2_core.RE2(pattern.encode("utf-8", "surrogatepass"), _RE2_OPTIONS)
    match = regexp.Match

    def full_match(text: bytes) -> bool:
        return bool(match(_ANCHOR_BOTH, text, 0, len(text))[0] != _NO_MATCH)

    return full_match


@functools.lru_cache(maxsize=4096)
def _compile(pattern: str) -> Callable[[bytes], bool] | None:
    """A full-match test of UTF-8 bytes for ``pattern``, compiled once with RE2;
    None if RE2 rejects the pattern."""
    try:
        compiled = re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as err:
        _REJECTED.setdefault(pattern, _re2_reason(err))
        return None
    if _re2_core is not None:
        return _core_matcher(pattern)
    return lambda text: compiled.fullmatch(text) is not None  # pragma: no cover


def regex_error(pattern: str) -> str | None:
    """Why RE2 rejects ``pattern`` (its parse error), or None when it is valid."""
    if _compile(pattern) is not None:
        return None
    return _REJECTED.get(pattern, "invalid pattern")


def _warn_invalid(pattern: str) -> None:
    """Logs, once per pattern, that a rejected pattern matches nothing."""
    if pattern not in _WARNED:
        _WARNED.add(pattern)
        log.warning(
            "invalid regular expression %r (RE2: %s); it matches nothing, as in TensorFlow",
            pattern,
            regex_error(pattern),
        )


def full_match_any(patterns: Iterable[str], s: str) -> bool:
    """Tells whether any pattern matches the whole of ``s``, like tfprof's
    ``RE2::FullMatch``.

    Patterns use RE2's syntax and run in linear time (no catastrophic
    backtracking). ``.`` matches any character except a newline and works on code
    points (names are UTF-8); a pattern RE2 rejects (back-references,
    look-arounds, unbalanced parentheses, ...) matches nothing, as in TF, after
    one warning naming it.

    Args:
        patterns: regular expressions; compiled ones are cached.
        s: the string to test, e.g. a node name or an op type.

    Returns:
        True if at least one pattern matches all of ``s``.
    """
    text = None
    for pattern in patterns:
        full_match = _compile(pattern)
        if full_match is None:
            _warn_invalid(pattern)
            continue
        if text is None:
            text = s.encode("utf-8", "surrogatepass")
        if full_match(text):
            return True
    return False


def full_match_many(patterns: Iterable[str], strings: Iterable[str]) -> list[bool]:
    """:func:`full_match_any` of each string (patterns compiled and checked once)."""
    tests = []
    for pattern in patterns:
        full_match = _compile(pattern)
        if full_match is None:
            _warn_invalid(pattern)
        else:
            tests.append(full_match)
    if not tests:
        return [False for _ in strings]
    out = []
    for s in strings:
        text = s.encode("utf-8", "surrogatepass")
        out.append(any(test(text) for test in tests))
    return out
