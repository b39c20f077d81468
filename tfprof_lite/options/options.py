"""The validated, immutable form of tfprof query options.

Contract:

* :class:`Options` holds exactly what tfprof's C++ ``tfprof::Options`` holds after
  ``Options::FromProtoStr``: 11 ``min_*``/``max_depth``/``step`` integers, ``order_by``,
  five regex lists, ``account_displayed_op_only``, ``select`` as a *sorted,
  de-duplicated* tuple (tfprof keeps a ``std::set``) and the parsed ``-output``
  (:class:`OutputSpec`).
* :meth:`Options.from_dict` accepts the dicts the TF Python API accepts
  (``tf.compat.v1.profiler`` / ``ProfileOptionBuilder``) and applies the defaults of
  TF's ``model_analyzer._build_options`` for missing keys. Note those are *not* the
  builder defaults: a missing ``account_type_regexes`` or ``show_name_regexes`` means
  an empty list, i.e. nothing accounted / nothing shown, exactly like TF.
* It is stricter than TF where TF would silently do something useless: unknown keys
  and wrongly typed values (TF iterates a bare string character by character) raise
  :class:`~tfprof_lite.errors.InvalidOptionError`. It keeps TF's permissiveness where
  TF still produces output: unknown ``select`` names (printed as ``Unknown select: x``
  in the Doc section) and unknown ``order_by`` values (name order) are accepted;
  :meth:`Options.validate_strict` rejects them for the CLI.
* The five regex options are RE2 patterns matched with :func:`full_match_any`
  (``RE2::FullMatch``, linear time). A pattern RE2 rejects matches nothing, as in TF,
  with one logged warning naming it when first used; :meth:`Options.validate_strict`
  rejects it (CLI).
* :func:`parse_output` implements ``ParseOutput`` of
  ``tensorflow/core/profiler/internal/tfprof_options.cc``; its error messages are TF's
  texts (see the function for the small differences).
* :meth:`Options.to_dict` returns a TF-style dict that both TF and
  :meth:`Options.from_dict` turn back into the same options (a fixed point).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import logging
import operator
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, SupportsIndex, cast

import re2  # type: ignore[import-untyped]

from tfprof_lite.errors import InvalidOptionError

__all__ = [
    "OPTION_NAMES",
    "ORDER_BY_NAMES",
    "OUTPUT_TYPES",
    "SELECT_NAMES",
    "Options",
    "OutputSpec",
    "full_match_any",
    "full_match_many",
    "regex_error",
    "parse_output",
]

#: Option keys in tfprof's canonical order (``kOptions`` without the leading ``-``);
#: also the keys of :meth:`Options.to_dict` and the order of the Options block.
OPTION_NAMES: tuple[str, ...] = (
    "max_depth",
    "min_bytes",
    "min_peak_bytes",
    "min_residual_bytes",
    "min_output_bytes",
    "min_micros",
    "min_accelerator_micros",
    "min_cpu_micros",
    "min_params",
    "min_float_ops",
    "min_occurrence",
    "step",
    "order_by",
    "account_type_regexes",
    "start_name_regexes",
    "trim_name_regexes",
    "show_name_regexes",
    "hide_name_regexes",
    "account_displayed_op_only",
    "select",
    "output",
)

#: The ``order_by`` values the tfprof CLI accepts (``kOrderBy``, in TF's order).
ORDER_BY_NAMES: tuple[str, ...] = (
    "name",
    "bytes",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
    "micros",
    "accelerator_micros",
    "cpu_micros",
    "params",
    "float_ops",
    "occurrence",
)

#: The ``select`` values tfprof knows (``kShown``, in TF's order).
SELECT_NAMES: tuple[str, ...] = (
    "bytes",
    "micros",
    "params",
    "float_ops",
    "tensor_value",
    "device",
    "op_types",
    "occurrence",
    "input_shapes",
    "accelerator_micros",
    "cpu_micros",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
)

#: The ``-output`` types: tfprof's (``kOutput``, in TF's order), then ours
#: (``json``, ``csv``: machine-readable views; ``collapsed``: flame-graph stacks).
TF_OUTPUT_TYPES: tuple[str, ...] = ("timeline", "stdout", "file", "pprof", "none")
OUTPUT_TYPES: tuple[str, ...] = (*TF_OUTPUT_TYPES, "json", "csv", "collapsed")

# Output type -> (accepted keys, required keys). stdout/none accept nothing.
_OUTPUT_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "timeline": (frozenset({"outfile"}), frozenset({"outfile"})),
    "file": (frozenset({"outfile"}), frozenset({"outfile"})),
    "pprof": (frozenset({"outfile", "extended"}), frozenset({"outfile"})),
    "stdout": (frozenset(), frozenset()),
    "none": (frozenset(), frozenset()),
    "json": (frozenset({"outfile"}), frozenset({"outfile"})),
    "csv": (frozenset({"outfile"}), frozenset({"outfile"})),
    "collapsed": (frozenset({"outfile", "value"}), frozenset({"outfile"})),
}

_INT_OPTIONS: tuple[str, ...] = OPTION_NAMES[:12]
_REGEX_OPTIONS: tuple[str, ...] = OPTION_NAMES[13:18]
_DICT_ONLY_KEYS: tuple[str, ...] = ("dump_to_file",)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_VISUALIZE_FORMAT = "Visualize format: -output timeline:key=value,key=value,..."


# --------------------------------------------------------------------------- regexes


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


# --------------------------------------------------------------------------- output


@dataclass(frozen=True)
class OutputSpec:
    """A parsed ``-output`` option: the output type and its ``key=value`` options.

    Attributes:
        type: one of :data:`OUTPUT_TYPES`.
        options: ``(key, value)`` pairs sorted by key (tfprof keeps a ``std::map``).
    """

    type: str = field(
        default="stdout",
        metadata={"help": "Where the report goes: timeline, stdout, file, pprof or none."},
    )
    options: tuple[tuple[str, str], ...] = field(
        default=(),
        metadata={"help": "Sorted (key, value) pairs; only 'outfile' exists."},
    )

    def __post_init__(self) -> None:
        _check_output_type(self.type)
        pairs = dict(_as_pair(p) for p in self.options)
        for key in sorted(pairs):
            _check_output_key(self.type, key)
        _check_required_keys(self.type, pairs)
        object.__setattr__(self, "options", tuple(sorted(pairs.items())))

    @property
    def outfile(self) -> str | None:
        """The ``outfile`` value, or None for stdout/none."""
        return dict(self.options).get("outfile")

    def to_option_string(self) -> str:
        """Renders the spec as an ``-output`` value, e.g. ``file:outfile=x`` or ``stdout``.

        Returns:
            A string :func:`parse_output` turns back into this spec, except when a value
            cannot be written in the grammar (see :meth:`is_representable`).
        """
        if not self.options:
            return self.type
        return f"{self.type}:{_join_pairs(self.options)}"

    def block_text(self) -> str:
        """Renders the spec as tfprof's Options block does (``stdout:``, ``file:outfile=x``)."""
        return f"{self.type}:{_join_pairs(self.options)}"

    def is_representable(self) -> bool:
        """Tells whether :meth:`to_option_string` parses back to this spec.

        Values that are empty, contain ``,``, ``==`` or start/end with ``=`` cannot be
        written in the ``-output`` grammar; they only arise from ``dump_to_file`` or
        from constructing an :class:`OutputSpec` directly.
        """
        try:
            return parse_output(self.to_option_string()) == self
        except InvalidOptionError:
            return False


def _as_pair(item: object) -> tuple[str, str]:
    """Validates one ``(key, value)`` item of :attr:`OutputSpec.options`."""
    if not isinstance(item, tuple) or len(item) != 2 or not all(isinstance(x, str) for x in item):
        raise InvalidOptionError(f"OutputSpec options must be (key, value) strings, got {item!r}")
    return item[0], item[1]


def _join_pairs(pairs: Iterable[tuple[str, str]]) -> str:
    return ",".join(f"{k}={v}" for k, v in pairs)


def _check_output_type(output_type: str) -> None:
    if output_type not in _OUTPUT_KEYS:
        valid = ",".join(sorted(OUTPUT_TYPES))
        raise InvalidOptionError(f"E.g. Unknown output type: {output_type}, Valid types: {valid}")


def _check_output_key(output_type: str, key: str) -> None:
    if key not in _OUTPUT_KEYS[output_type][0]:
        raise InvalidOptionError(f"Unrecognized options {key} for output_type: {output_type}")


def _check_required_keys(output_type: str, pairs: Mapping[str, str]) -> None:
    for key in sorted(_OUTPUT_KEYS[output_type][1]):
        if key not in pairs:
            raise InvalidOptionError(
                f"Missing required output_options for {output_type}\n"
                f"E.g. -output {output_type}:{key}=..."
            )


def _split_key_value(text: str) -> tuple[str, str]:
    """Splits one ``key=value`` item the way tfprof does (empty pieces are dropped)."""
    pieces = [p for p in text.split("=") if p]
    if len(pieces) < 2:
        raise InvalidOptionError(_VISUALIZE_FORMAT)
    return pieces[0], "=".join(pieces[1:])


def parse_output(s: str) -> OutputSpec:
    """Parses an ``-output`` value: ``type[:key=value[,key=value...]]``.

    Follows tfprof's ``ParseOutput``: empty means ``stdout``; the type is the text
    before the first ``:``; items are split on ``,`` and then on ``=`` with empty
    pieces dropped (so ``outfile==a`` gives ``a`` and ``outfile=a=b`` gives ``a=b``); a
    repeated key keeps the last value; keys are checked item by item, required keys
    at the end.

    Error messages are TF's texts, with two differences: TF prints them as
    ``INVALID_ARGUMENT: <text>`` and ends some of them with a newline, which is
    dropped here. TF's quirks are kept: the unknown-type text starts with ``E.g.``
    and the format error always says ``timeline`` whatever the type was.

    Args:
        s: the option value, e.g. ``timeline:outfile=/tmp/tl.json``.

    Returns:
        The parsed :class:`OutputSpec`.

    Raises:
        InvalidOptionError: with one of ``E.g. Unknown output type: foo, Valid types:
            file,none,pprof,stdout,timeline``, ``Visualize format: -output
            timeline:key=value,key=value,...``, ``Unrecognized options k for
            output_type: t`` or ``Missing required output_options for t\\nE.g. -output
            t:outfile=...``.
    """
    if not s:
        return OutputSpec()
    output_type, sep, rest = s.partition(":")
    _check_output_type(output_type)
    pairs: dict[str, str] = {}
    items = rest.split(",") if sep else []
    for item in items:
        if item:
            key, value = _split_key_value(item)
            _check_output_key(output_type, key)
            pairs[key] = value
    _check_required_keys(output_type, pairs)
    return OutputSpec(output_type, tuple(pairs.items()))


# --------------------------------------------------------------------------- coercion


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


def _wrap_int32(number: int) -> int:
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


def _coercer(name: str) -> Callable[[str, object], object]:
    if name in _INT_OPTIONS:
        return _as_int
    if name in _REGEX_OPTIONS:
        return _as_regex_tuple
    special: dict[str, Callable[[str, object], object]] = {
        "order_by": _as_str,
        "account_displayed_op_only": _as_bool,
        "select": _as_select,
        "output": _as_output,
    }
    return special[name]


def _check_keys(d: Mapping[Any, object]) -> None:
    valid = OPTION_NAMES + _DICT_ONLY_KEYS
    for key in d:
        if key in valid:
            continue
        close = difflib.get_close_matches(str(key), valid, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise InvalidOptionError(f"Unknown option {key!r}.{hint} Valid options: {', '.join(valid)}")


def _plain_fields(d: Mapping[str, object]) -> dict[str, Any]:
    """The entries of ``d`` that map straight onto fields (all but the output keys)."""
    return {k: v for k, v in d.items() if k in OPTION_NAMES and k != "output"}


def _dump_to_file_output(output: str, dump_to_file: str) -> OutputSpec:
    """Applies the deprecated ``dump_to_file`` key, warning on stderr exactly like TF."""
    sys.stderr.write(
        "-dump_to_file option is deprecated. Please use -output file:outfile=<filename>\n"
        f"-output {output} is overwritten with -output file:outfile={dump_to_file}\n"
    )
    return OutputSpec("file", (("outfile", dump_to_file),))


def _output_from_dict(d: Mapping[str, object], default: str) -> OutputSpec:
    raw = _as_str("output", d.get("output", default))
    spec = parse_output(raw)
    dump_to_file = _as_str("dump_to_file", d.get("dump_to_file", ""))
    return _dump_to_file_output(raw, dump_to_file) if dump_to_file else spec


# --------------------------------------------------------------------------- Options


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class Options:
    """One profiling query's options, validated and normalized.

    Construct it with :meth:`from_dict` (TF-style dicts) or directly with keywords;
    both run the same validation. Defaults are TF's ``_build_options`` defaults.
    ``max_depth`` is narrowed to a C ``int`` like tfprof does (``2**32 + 1`` becomes
    ``1``); ``select`` becomes a sorted, de-duplicated tuple; lists become tuples.

    Raises:
        InvalidOptionError: on a wrongly typed value, an invalid regex or an invalid
            output spec.
    """

    max_depth: int = field(default=10, metadata=_help("Maximum depth of the shown tree/list."))
    min_bytes: int = field(default=0, metadata=_help("Show nodes requesting >= this many bytes."))
    min_peak_bytes: int = field(default=0, metadata=_help("Show nodes with peak bytes >= this."))
    min_residual_bytes: int = field(
        default=0, metadata=_help("Show nodes with residual (not freed) bytes >= this.")
    )
    min_output_bytes: int = field(
        default=0, metadata=_help("Show nodes with output bytes >= this.")
    )
    min_micros: int = field(
        default=0, metadata=_help("Show nodes with total (accelerator + cpu) time >= this.")
    )
    min_accelerator_micros: int = field(
        default=0, metadata=_help("Show nodes with accelerator time >= this.")
    )
    min_cpu_micros: int = field(default=0, metadata=_help("Show nodes with cpu time >= this."))
    min_params: int = field(default=0, metadata=_help("Show nodes with >= this many params."))
    min_float_ops: int = field(default=0, metadata=_help("Show nodes with >= this many flops."))
    min_occurrence: int = field(
        default=0, metadata=_help("Show nodes aggregating >= this many graph nodes.")
    )
    step: int = field(default=-1, metadata=_help("Profile step to show; -1 averages all steps."))
    order_by: str = field(
        default="name", metadata=_help("Sort key of siblings; unknown values sort by name.")
    )
    account_type_regexes: tuple[str, ...] = field(
        default=(), metadata=_help("Account only nodes with an op type matching one of these.")
    )
    start_name_regexes: tuple[str, ...] = field(
        default=(), metadata=_help("Start showing from nodes whose name matches one of these.")
    )
    trim_name_regexes: tuple[str, ...] = field(
        default=(), metadata=_help("Do not descend below nodes whose name matches.")
    )
    show_name_regexes: tuple[str, ...] = field(
        default=(), metadata=_help("Show only nodes whose name matches one of these.")
    )
    hide_name_regexes: tuple[str, ...] = field(
        default=(), metadata=_help("Hide nodes whose name matches one of these.")
    )
    account_displayed_op_only: bool = field(
        default=False, metadata=_help("Recompute totals from the displayed nodes only.")
    )
    select: tuple[str, ...] = field(
        default=(), metadata=_help("Sorted, de-duplicated attributes to show.")
    )
    output: OutputSpec = field(
        default_factory=OutputSpec, metadata=_help("Where and how the result is written.")
    )

    def __post_init__(self) -> None:
        for name in OPTION_NAMES:
            value = _coercer(name)(name, getattr(self, name))
            object.__setattr__(self, name, value)
        object.__setattr__(self, "max_depth", _wrap_int32(self.max_depth))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Options:
        """Builds options from a TF-style dict (e.g. ``ProfileOptionBuilder().build()``).

        Missing keys get ``_build_options`` defaults. A non-empty ``dump_to_file``
        forces ``file:outfile=<dump_to_file>`` and writes TF's two-line deprecation
        note to stderr (after ``output`` itself has been validated, as in TF).

        Args:
            d: the option dict.

        Returns:
            The validated options.

        Raises:
            InvalidOptionError: unknown key (with a suggestion and the valid keys),
                wrong value type, invalid regex or invalid output.
        """
        if not isinstance(d, Mapping):
            raise InvalidOptionError(f"Options must be a dict, got {type(d).__name__}")
        _check_keys(d)
        base = cls(**_plain_fields(d))
        return dataclasses.replace(base, output=_output_from_dict(d, "stdout"))

    def updated(self, overrides: Mapping[str, Any]) -> Options:
        """Returns a copy with some options replaced, validated like :meth:`from_dict`.

        Args:
            overrides: TF-style keys and values, e.g. from
                :func:`tfprof_lite.options.cli_syntax.parse_cli_options`.

        Returns:
            The new options.
        """
        _check_keys(overrides)
        result = dataclasses.replace(self, **_plain_fields(overrides))
        if "output" in overrides or "dump_to_file" in overrides:
            output = _output_from_dict(overrides, self.output.to_option_string())
            result = dataclasses.replace(result, output=output)
        return result

    def to_dict(self) -> dict[str, Any]:
        """Returns the TF-style dict (all 21 keys, lists for list options).

        A file ``outfile`` that the ``-output`` grammar cannot express (e.g. one with
        a ``,``; only possible via ``dump_to_file``) is returned as ``dump_to_file``
        with ``output`` ``stdout``, which TF and :meth:`from_dict` both accept.
        """
        d: dict[str, Any] = {}
        for name in OPTION_NAMES:
            value = getattr(self, name)
            d[name] = list(value) if isinstance(value, tuple) else value
        d["output"] = self.output.to_option_string()
        if self.output.type == "file" and not self.output.is_representable():
            d["output"] = "stdout"
            d["dump_to_file"] = self.output.outfile
        return d

    def validate_strict(self) -> None:
        """Rejects what tfprof only tolerates: unknown ``order_by`` or ``select`` names
        and regexes RE2 rejects (which would match nothing).

        Raises:
            InvalidOptionError: ``Invalid option '-order_by' value: 'x'`` (or
                ``-select``) followed by the valid values and a close match if any,
                or ``Option 'x' has an invalid regular expression ...``.
        """
        if self.order_by not in ORDER_BY_NAMES:
            raise _strict_error("order_by", self.order_by, ORDER_BY_NAMES)
        for name in self.select:
            if name not in SELECT_NAMES:
                raise _strict_error("select", name, SELECT_NAMES)
        for option in _REGEX_OPTIONS:
            for pattern in getattr(self, option):
                reason = regex_error(pattern)
                if reason is not None:
                    raise InvalidOptionError(
                        f"Option '{option}' has an invalid regular expression {pattern!r}: "
                        f"{reason} (RE2 syntax)"
                    )

    def block_text(self) -> str:
        """Renders tfprof's Options block (``Options::ToString``): 21 ``%-28s`` lines."""
        lines = [f"{'-' + name:<28}{self._block_value(name)}" for name in OPTION_NAMES]
        return "\n".join(lines) + "\n"

    def _block_value(self, name: str) -> str:
        value = getattr(self, name)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, tuple):
            return ",".join(value)
        if isinstance(value, OutputSpec):
            return value.block_text()
        return str(value)


def _strict_error(name: str, value: str, valid: tuple[str, ...]) -> InvalidOptionError:
    close = difflib.get_close_matches(value, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return InvalidOptionError(
        f"Invalid option '-{name}' value: '{value}'.{hint} Valid values: {', '.join(valid)}"
    )
