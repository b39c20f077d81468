"""User-code mode of the code view: which call-stack frames are the user's own.

Contract:

* :class:`UserCode` is the value of ``Options.user_code`` (``None``: mode off,
  tfprof's code view unchanged). It holds two tuples of RE2 patterns,
  ``include`` and ``exclude``, each pattern full-matched (as the other regex
  options, :mod:`tfprof_lite.options.regex`) against a frame's file path (with
  ``\\`` turned into ``/``) and against its function name; a frame matches a
  pattern list if either does.
* :meth:`UserCode.is_user` decides a frame: a frame matching ``exclude`` is
  library code; else one matching ``include`` is user code; else it is library
  code if its file matches :data:`LIBRARY_PATTERNS` (TensorFlow, Keras,
  ``tf_keras``, absl, the Python standard library, ``site-packages`` and
  ``dist-packages``, frozen and generated modules, code compiled from a
  string (``<string>``), tfprof_lite's own runtime),
  user code otherwise.
* :func:`as_user_code` turns what a dict or builder may hold (``None``,
  ``False``, ``True``, a mapping with ``include``/``exclude`` lists, a
  :class:`UserCode`) into ``UserCode | None``, raising
  :class:`~tfprof_lite.errors.InvalidOptionError` on anything else;
  :meth:`UserCode.to_dict` is its inverse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.options.regex import full_match_any, regex_error

__all__ = ["LIBRARY_PATTERNS", "USER_CODE_KEY", "UserCode", "as_user_code"]

#: The option-dict key of the mode (not one of tfprof's 21 options).
USER_CODE_KEY = "user_code"

#: File paths that are library code unless ``include`` says otherwise.
LIBRARY_PATTERNS: tuple[str, ...] = (
    r".*/(site|dist)-packages/.*",
    r"(.*/)?(tensorflow|tensorflow_core|keras|tf_keras|absl)/.*",
    r".*/lib(64)?/(pypy|python)[0-9][0-9.]*/.*",
    r".*/Lib/.*",
    r"<frozen [^>]*>",
    r"<__array_function__ internals>",
    # code compiled from a string: launchers (python -c, a test runner's workers)
    r"<string>",
    # tfprof_lite's own runtime (python -m tfprof_lite.run, session hooks), also
    # when it runs from a source checkout rather than site-packages
    r".*/tfprof_lite/(session|capture|cli)/.*",
    r".*/tfprof_lite/(profiler|api|ingest|run|__main__)\.py",
)


def _frame_matches(patterns: tuple[str, ...], file: str, function: str) -> bool:
    return bool(patterns) and (full_match_any(patterns, file) or full_match_any(patterns, function))


@dataclass(frozen=True)
class UserCode:
    """Which frames count as the user's code (see the module docstring).

    Attributes:
        include: patterns of frames that are user code even in a library path.
        exclude: patterns of frames that are library code even outside one;
            ``exclude`` wins over ``include``.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("include", "exclude"):
            object.__setattr__(self, name, _patterns(name, getattr(self, name)))

    def is_user(self, file: str, function: str) -> bool:
        """Whether the frame in ``file`` running ``function`` is user code."""
        path = file.replace("\\", "/")
        if _frame_matches(self.exclude, path, function):
            return False
        if _frame_matches(self.include, path, function):
            return True
        return not full_match_any(LIBRARY_PATTERNS, path)

    def to_dict(self) -> dict[str, list[str]]:
        """``{"include": [...], "exclude": [...]}``, accepted by :func:`as_user_code`."""
        return {"include": list(self.include), "exclude": list(self.exclude)}

    def invalid_pattern(self) -> tuple[str, str] | None:
        """The first pattern RE2 rejects and RE2's reason, or None."""
        for pattern in (*self.include, *self.exclude):
            reason = regex_error(pattern)
            if reason is not None:
                return pattern, reason
        return None


def _patterns(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidOptionError(
            f"Option 'user_code' {name} expects a list of strings, got {value!r}"
        )
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise InvalidOptionError(
                f"Option 'user_code' {name} expects a list of strings, got {item!r}"
            )
    return items


def as_user_code(value: Any) -> UserCode | None:
    """The mode a dict or builder value asks for (see the module docstring).

    Raises:
        InvalidOptionError: a value of another type or a mapping with other keys.
    """
    if value is None or value is False:
        return None
    if value is True:
        return UserCode()
    if isinstance(value, UserCode):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in ("include", "exclude"))
        if unknown:
            raise InvalidOptionError(
                f"Option 'user_code' takes the keys include and exclude, got {unknown[0]!r}"
            )
        return UserCode(value.get("include", ()), value.get("exclude", ()))
    raise InvalidOptionError(
        f"Option 'user_code' expects a bool or a dict with include/exclude lists, "
        f"got {type(value).__name__} {value!r}"
    )
