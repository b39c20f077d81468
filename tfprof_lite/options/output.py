"""The ``-output`` option: its types, their ``key=value`` options and its parser.

Contract: :func:`parse_output` implements ``ParseOutput`` of
``tensorflow/core/profiler/internal/tfprof_options.cc``; its error messages are
TF's texts (see the function for the small differences). :class:`OutputSpec` is
the parsed value, validated on construction, and renders back to an ``-output``
string (:meth:`OutputSpec.to_option_string`) and to the Options block's text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tfprof_lite.errors import InvalidOptionError

__all__ = ["OUTPUT_TYPES", "TF_OUTPUT_TYPES", "OutputSpec", "parse_output"]

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

_VISUALIZE_FORMAT = "Visualize format: -output timeline:key=value,key=value,..."


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
