"""The validated, immutable form of tfprof query options.

Contract:

* :class:`Options` holds exactly what tfprof's C++ ``tfprof::Options`` holds after
  ``Options::FromProtoStr``: 11 ``min_*``/``max_depth``/``step`` integers, ``order_by``,
  five regex lists, ``account_displayed_op_only``, ``select`` as a *sorted,
  de-duplicated* tuple (tfprof keeps a ``std::set``) and the parsed ``-output``
  (:class:`~tfprof_lite.options.output.OutputSpec`).
* :meth:`Options.from_dict` accepts the dicts the TF Python API accepts
  (``tf.compat.v1.profiler`` / ``ProfileOptionBuilder``) and applies the defaults of
  TF's ``model_analyzer._build_options`` for missing keys. Note those are *not* the
  builder defaults: a missing ``account_type_regexes`` or ``show_name_regexes`` means
  an empty list, i.e. nothing accounted / nothing shown, exactly like TF.
* It is stricter than TF where TF would silently do something useless: unknown keys
  and wrongly typed values (TF iterates a bare string character by character) raise
  :class:`~tfprof_lite.errors.InvalidOptionError` (the checks are in
  :mod:`tfprof_lite.options.coerce`). It keeps TF's permissiveness where TF still
  produces output: unknown ``select`` names (printed as ``Unknown select: x`` in the
  Doc section) and unknown ``order_by`` values (name order) are accepted;
  :meth:`Options.validate_strict` rejects them for the CLI.
* The five regex options are RE2 patterns (:mod:`tfprof_lite.options.regex`); a
  pattern RE2 rejects matches nothing, as in TF; :meth:`Options.validate_strict`
  rejects it (CLI).
* ``-output`` is parsed by :func:`~tfprof_lite.options.output.parse_output`.
* Beyond tfprof: ``user_code`` (:class:`~tfprof_lite.options.user_code.UserCode`,
  default None) turns on the code view's user-code mode. It is no tfprof option:
  not in :data:`OPTION_NAMES`, not in the Options block, and in the dict only when
  set (TensorFlow ignores the extra key), so with the mode off everything is as
  in TF.
* :meth:`Options.to_dict` returns a TF-style dict that both TF and
  :meth:`Options.from_dict` turn back into the same options (a fixed point).
* The ``select`` and ``order_by`` vocabularies (:data:`SELECT_NAMES`,
  :data:`ORDER_BY_NAMES`) are those of the metric table
  (:mod:`tfprof_lite.base.metrics`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tfprof_lite.base.metrics import ORDER_BY_NAMES, SELECT_NAMES
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.options.coerce import (
    EXTENSION_NAMES,
    OPTION_NAMES,
    REGEX_OPTIONS,
    check_keys,
    coercer,
    output_from_dict,
    plain_fields,
    wrap_int32,
)
from tfprof_lite.options.output import OutputSpec
from tfprof_lite.options.regex import regex_error
from tfprof_lite.options.user_code import UserCode

__all__ = ["OPTION_NAMES", "ORDER_BY_NAMES", "SELECT_NAMES", "Options"]


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
    user_code: UserCode | None = field(
        default=None,
        metadata=_help(
            "Code view only (not a tfprof option): fold library frames into the user's "
            "own frames; None keeps tfprof's view."
        ),
    )

    def __post_init__(self) -> None:
        for name in OPTION_NAMES + EXTENSION_NAMES:
            value = coercer(name)(name, getattr(self, name))
            object.__setattr__(self, name, value)
        object.__setattr__(self, "max_depth", wrap_int32(self.max_depth))

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
        check_keys(d)
        base = cls(**plain_fields(d))
        return dataclasses.replace(base, output=output_from_dict(d, "stdout"))

    def updated(self, overrides: Mapping[str, Any]) -> Options:
        """Returns a copy with some options replaced, validated like :meth:`from_dict`.

        Args:
            overrides: TF-style keys and values, e.g. from
                :func:`tfprof_lite.options.cli_syntax.parse_cli_options`.

        Returns:
            The new options.
        """
        check_keys(overrides)
        result = dataclasses.replace(self, **plain_fields(overrides))
        if "output" in overrides or "dump_to_file" in overrides:
            output = output_from_dict(overrides, self.output.to_option_string())
            result = dataclasses.replace(result, output=output)
        return result

    def to_dict(self) -> dict[str, Any]:
        """Returns the TF-style dict (all 21 keys, lists for list options; plus
        ``user_code`` when the mode is on, a key TensorFlow ignores).

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
        if self.user_code is not None:
            d["user_code"] = self.user_code.to_dict()
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
        for option in REGEX_OPTIONS:
            for pattern in getattr(self, option):
                reason = regex_error(pattern)
                if reason is not None:
                    raise InvalidOptionError(
                        f"Option '{option}' has an invalid regular expression {pattern!r}: "
                        f"{reason} (RE2 syntax)"
                    )
        bad = self.user_code.invalid_pattern() if self.user_code is not None else None
        if bad is not None:
            raise InvalidOptionError(
                f"Option 'user_code' has an invalid regular expression {bad[0]!r}: "
                f"{bad[1]} (RE2 syntax)"
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
    import difflib  # only for a misspelt name

    close = difflib.get_close_matches(value, valid, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return InvalidOptionError(
        f"Invalid option '-{name}' value: '{value}'.{hint} Valid values: {', '.join(valid)}"
    )
