"""Checking and normalizing the values of a TF-style option dict.

Contract: each ``_as_*`` function takes an option name and a value as the TF
Python API would pass it and returns the normalized value, or raises
:class:`~tfprof_lite.errors.InvalidOptionError` naming the option and what it
expects (TF would iterate a bare string character by character; here it is an
error). :func:`coercer` picks the function of an option; :func:`check_keys`
rejects unknown keys with a close match; :func:`output_from_dict` applies the
deprecated ``dump_to_file`` key as TF does.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterable, Mapping
from typing import Any, Callable, SupportsIndex, cast

from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.options.names import OPTION_NAMES
from tfprof_lite.options.output import OutputSpec, parse_output
from tfprof_lite.options.user_code import USER_CODE_KEY, as_user_code

__all__ = [
    "DICT_ONLY_KEYS",
    "EXTENSION_NAMES",
    "INT_OPTIONS",
    "OPTION_NAMES",
    "REGEX_OPTIONS",
    "check_keys",
    "coercer",
    "output_from_dict",
    "plain_fields",
    "wrap_int32",
]

INT_OPTIONS: tuple[str, ...] = OPTION_NAMES[:12]
REGEX_OPTIONS: tuple[str, ...] = OPTION_NAMES[13:18]
DICT_ONLY_KEYS: tuple[str, ...] = ("dump_to_file",)
#: Options of our own beyond tfprof's 21 (fields of ``Options``, dict keys only
#: when set, never in the Options block): the code view's user-code mode.
EXTENSION_NAMES: tuple[str, ...] = (USER_CODE_KEY,)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _type_error(name: str, expected: str, value: object, hint: str = "") -> InvalidOptionError:
    got = f"{type(value).__name__} {value!r}"
    return InvalidOptionError(f"Option '{name}' expects {expected}, got {got}{hint}")


def _as_str(name: str, value: object) -> str:
    """Accepts ``str`` (and UTF-8 ``bytes``, like protobuf does)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise _type_error(name, "a UTF-8 string", value) from None
    if not isinstance(value, str):
        raise _type_error(name, "a string", value)
    return value


def _as_int(name: str, value: object) -> int:
    """Accepts ints (and numpy integers) within int64; rejects bools, floats, strings."""
    if isinstance(value, bool):
        raise _type_error(name, "an int", value)
    try:
        number = operator.index(cast(SupportsIndex, value))
    except TypeError:
        hint = " (pass a number, not a string)" if isinstance(value, str) else ""
        raise _type_error(name, "an int", value, hint) from None
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise InvalidOptionError(f"Option '{name}' value out of int64 range: {number}")
    return number


def wrap_int32(number: int) -> int:
    """Narrows to C ``int`` like tfprof's ``Options(int max_depth, ...)`` does."""
    return (number + 2**31) % 2**32 - 2**31


def _as_bool(name: str, value: object) -> bool:
    """Accepts bools, ints (as protobuf does) and numpy bools."""
    numpy_bool = type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")
    if isinstance(value, (bool, int)) or numpy_bool:
        return bool(value)
    raise _type_error(name, "a bool", value)


def _as_str_tuple(name: str, value: object) -> tuple[str, ...]:
    """Accepts a list/tuple/set of strings; a bare string is an error, not a list of chars."""
    if isinstance(value, (str, bytes)):
        hint = f" (pass a list, e.g. [{value!r}])"
        raise _type_error(name, "a list of strings", value, hint)
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise _type_error(name, "a list of strings", value)
    return tuple(_as_str(f"{name}[{i}]", item) for i, item in enumerate(value))


def _as_regex_tuple(name: str, value: object) -> tuple[str, ...]:
    """A list of patterns; one RE2 rejects is kept (it matches nothing, as in TF)."""
    return _as_str_tuple(name, value)


def _as_select(name: str, value: object) -> tuple[str, ...]:
    return tuple(sorted(set(_as_str_tuple(name, value))))


def _as_output(name: str, value: object) -> OutputSpec:
    if isinstance(value, OutputSpec):
        return value
    return parse_output(_as_str(name, value))


def coercer(name: str) -> Callable[[str, object], object]:
    """The function that checks and normalizes the value of option ``name``."""
    if name in INT_OPTIONS:
        return _as_int
    if name in REGEX_OPTIONS:
        return _as_regex_tuple
    special: dict[str, Callable[[str, object], object]] = {
        "order_by": _as_str,
        "account_displayed_op_only": _as_bool,
        "select": _as_select,
        "output": _as_output,
        USER_CODE_KEY: lambda _name, value: as_user_code(value),
    }
    return special[name]


def check_keys(d: Mapping[Any, object]) -> None:
    """Rejects a key that is not an option, suggesting the closest one."""
    valid = OPTION_NAMES + DICT_ONLY_KEYS + EXTENSION_NAMES
    for key in d:
        if key in valid:
            continue
        import difflib  # only for a misspelt name

        close = difflib.get_close_matches(str(key), valid, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise InvalidOptionError(f"Unknown option {key!r}.{hint} Valid options: {', '.join(valid)}")


def plain_fields(d: Mapping[str, object]) -> dict[str, Any]:
    """The entries of ``d`` that map straight onto fields (all but the output keys)."""
    return {
        k: v for k, v in d.items() if (k in OPTION_NAMES and k != "output") or k in EXTENSION_NAMES
    }


def _dump_to_file_output(output: str, dump_to_file: str) -> OutputSpec:
    """Applies the deprecated ``dump_to_file`` key, warning on stderr exactly like TF."""
    sys.stderr.write(
        "-dump_to_file option is deprecated. Please use -output file:outfile=<filename>\n"
        f"-output {output} is overwritten with -output file:outfile={dump_to_file}\n"
    )
    return OutputSpec("file", (("outfile", dump_to_file),))


def output_from_dict(d: Mapping[str, object], default: str) -> OutputSpec:
    """The ``-output`` of a dict: ``output`` (or ``default``), or ``dump_to_file`` if set."""
    raw = _as_str("output", d.get("output", default))
    spec = parse_output(raw)
    dump_to_file = _as_str("dump_to_file", d.get("dump_to_file", ""))
    return _dump_to_file_output(raw, dump_to_file) if dump_to_file else spec
