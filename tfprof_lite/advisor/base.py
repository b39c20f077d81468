"""The checker interface every advisor checker implements.

Contract:

* A checker class has a unique ``name`` (the key users pass in the advisor options
  and the key of its entry in the returned AdviceProto) and the tuple
  ``option_names`` of the option keys it reads (TensorFlow's checkers read none).
* It is built from the string options given for it; unknown keys and bad values
  raise :class:`~tfprof_lite.errors.InvalidOptionError` at construction, before any
  checker runs, so a bad option never leaves half the advice printed.
* :meth:`Checker.check` reads the profile (never modifies it), prints nothing on
  stdout and returns the checker's report strings, or ``None`` when the checker
  produces no entry at all for this profile (only JobChecker does that).
  Diagnostics go to the ``tfprof_lite`` logger (stderr by default).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import ClassVar

from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model.profile import ProfileModel

__all__ = ["Checker"]


class Checker(abc.ABC):
    """Base class of the advisor checkers.

    Args:
        options: the checker's options (string keys and values); ``None`` or an
            empty mapping for the defaults.

    Raises:
        InvalidOptionError: an option key the checker does not read, or a value
            the checker rejects.
    """

    #: The checker's name: its options key and its AdviceProto entry.
    name: ClassVar[str] = ""
    #: The option keys the checker reads.
    option_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: Mapping[str, str] | None = None) -> None:
        given = dict(options or {})
        unknown = sorted(key for key in given if key not in self.option_names)
        if unknown:
            accepted = (
                f"it accepts {', '.join(self.option_names)}"
                if self.option_names
                else "it accepts no options"
            )
            raise InvalidOptionError(
                f"{self.name}: unknown option(s) {', '.join(unknown)}; {accepted}"
            )
        self.options = given
        self.configure(given)

    def configure(self, options: dict[str, str]) -> None:
        """Parse the checker's options (validated keys); the default reads none.

        Raises:
            InvalidOptionError: a value the checker rejects.
        """
        return None

    def int_option(self, options: dict[str, str], key: str, default: int, minimum: int = 0) -> int:
        """``options[key]`` (or ``default``) as an integer of at least ``minimum``.

        Raises:
            InvalidOptionError: not an integer, or below ``minimum``.
        """
        text = options.get(key, str(default))
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise InvalidOptionError(
                f"{self.name}: {key} must be an integer >= {minimum}, got {text!r}"
            )
        return value

    @abc.abstractmethod
    def check(self, model: ProfileModel) -> list[str] | None:
        """Examine ``model``.

        Returns:
            The report strings (possibly none), or ``None`` for no entry at all.
        """
