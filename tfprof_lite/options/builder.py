"""``ProfileOptionBuilder``: TF's option-dict builder, call for call.

Contract: same constructor, static presets and methods as
``tf.compat.v1.profiler.ProfileOptionBuilder`` (TF 2.21), and every ``build()``/preset
dict is equal to TF's (same keys, same values). One method is our own:
:meth:`ProfileOptionBuilder.with_user_code` adds a ``user_code`` key (which TF's
profiler ignores); without it the dicts are TF's. Like TF, nothing is validated here:
the builder only assembles a plain dict; :meth:`tfprof_lite.options.Options.from_dict`
validates it. Setters store what they are given (lists are shallow-copied, the
constructor's dict is deep-copied), and every setter returns ``self`` for chaining.

Note that the builder's defaults (max_depth 100, ``.*`` account/start/show regexes,
``select ['micros']``) differ from the defaults applied to keys *missing* from a dict
(see :class:`tfprof_lite.options.Options`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

__all__ = ["ProfileOptionBuilder", "TRAINABLE_VARIABLES"]

#: The op type tfprof's logger gives trainable variables (``tfprof_logger``).
TRAINABLE_VARIABLES = "_trainable_variables"

# Key order used for every dict built here (tfprof's option order).
_KEY_ORDER = (
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
    "order_by",
    "account_type_regexes",
    "start_name_regexes",
    "trim_name_regexes",
    "show_name_regexes",
    "hide_name_regexes",
    "account_displayed_op_only",
    "select",
    "step",
    "output",
)


def _base(**changes: Any) -> dict[str, Any]:
    """The builder's default dict with ``changes`` applied, keys in tfprof order."""
    options: dict[str, Any] = {
        "max_depth": 100,
        "min_bytes": 0,
        "min_micros": 0,
        "min_params": 0,
        "min_float_ops": 0,
        "min_occurrence": 0,
        "order_by": "name",
        "account_type_regexes": [".*"],
        "start_name_regexes": [".*"],
        "trim_name_regexes": [],
        "show_name_regexes": [".*"],
        "hide_name_regexes": [],
        "account_displayed_op_only": False,
        "select": ["micros"],
        "step": -1,
        "output": "stdout",
    }
    options.update(changes)
    return {key: options[key] for key in _KEY_ORDER if key in options}


class ProfileOptionBuilder:
    """Builds the option dicts taken by the profiler's ``profile_*`` calls.

    Example:
        >>> opts = (ProfileOptionBuilder()
        ...         .with_max_depth(10)
        ...         .with_min_execution_time(min_micros=1000)
        ...         .select(["accelerator_micros"])
        ...         .build())
        >>> opts["max_depth"], opts["min_micros"], opts["select"]
        (10, 1000, ['accelerator_micros'])
    """

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        """Starts from a deep copy of ``options``, or from the builder defaults.

        Args:
            options: an option dict to start from, e.g. a preset.
        """
        if options is not None:
            self._options: dict[str, Any] = copy.deepcopy(options)
        else:
            self._options = _base()

    # ------------------------------------------------------------------ presets

    @staticmethod
    def trainable_variables_parameter() -> dict[str, Any]:
        """Options counting the parameters of trainable variables (for the scope view).

        Returns:
            A fresh option dict.
        """
        return _base(
            max_depth=10000,
            account_type_regexes=[TRAINABLE_VARIABLES],
            account_displayed_op_only=True,
            select=["params"],
        )

    @staticmethod
    def float_operation() -> dict[str, Any]:
        """Options showing float operations of nodes with at least one flop.

        Returns:
            A fresh option dict.
        """
        return _base(
            max_depth=10000,
            min_float_ops=1,
            order_by="float_ops",
            account_displayed_op_only=True,
            select=["float_ops"],
        )

    @staticmethod
    def time_and_memory(
        min_micros: int = 1,
        min_bytes: int = 1,
        min_accelerator_micros: int = 0,
        min_cpu_micros: int = 0,
        min_peak_bytes: int = 0,
        min_residual_bytes: int = 0,
        min_output_bytes: int = 0,
    ) -> dict[str, Any]:
        """Options showing execution time and memory, ordered by time.

        Args:
            min_micros: minimum total (accelerator + cpu) time of a shown node.
            min_bytes: minimum requested bytes of a shown node.
            min_accelerator_micros: minimum accelerator time of a shown node.
            min_cpu_micros: minimum cpu time of a shown node.
            min_peak_bytes: minimum peak bytes of a shown node.
            min_residual_bytes: minimum residual (not freed) bytes of a shown node.
            min_output_bytes: minimum output bytes of a shown node.

        Returns:
            A fresh option dict.
        """
        return _base(
            max_depth=10000,
            min_bytes=min_bytes,
            min_peak_bytes=min_peak_bytes,
            min_residual_bytes=min_residual_bytes,
            min_output_bytes=min_output_bytes,
            min_micros=min_micros,
            min_accelerator_micros=min_accelerator_micros,
            min_cpu_micros=min_cpu_micros,
            order_by="micros",
            account_displayed_op_only=True,
            select=["micros", "bytes"],
        )

    # ------------------------------------------------------------------ build

    def build(self) -> dict[str, Any]:
        """Returns a deep copy of the option dict built so far."""
        return copy.deepcopy(self._options)

    def _set(self, **values: Any) -> ProfileOptionBuilder:
        self._options.update(values)
        return self

    # ------------------------------------------------------------------ filters

    def with_max_depth(self, max_depth: int) -> ProfileOptionBuilder:
        """Sets how deep the tree (or how long the op list) is shown.

        Args:
            max_depth: maximum depth; the root is depth 1 in tree views.

        Returns:
            self
        """
        return self._set(max_depth=max_depth)

    def with_min_memory(
        self,
        min_bytes: int = 0,
        min_peak_bytes: int = 0,
        min_residual_bytes: int = 0,
        min_output_bytes: int = 0,
    ) -> ProfileOptionBuilder:
        """Shows only nodes using at least this much memory (sets all four keys).

        Args:
            min_bytes: minimum requested bytes.
            min_peak_bytes: minimum peak bytes.
            min_residual_bytes: minimum bytes still allocated after the op ran.
            min_output_bytes: minimum bytes of the op's outputs.

        Returns:
            self
        """
        return self._set(
            min_bytes=min_bytes,
            min_peak_bytes=min_peak_bytes,
            min_residual_bytes=min_residual_bytes,
            min_output_bytes=min_output_bytes,
        )

    def with_min_execution_time(
        self, min_micros: int = 0, min_accelerator_micros: int = 0, min_cpu_micros: int = 0
    ) -> ProfileOptionBuilder:
        """Shows only nodes running at least this long (sets all three keys).

        Args:
            min_micros: minimum total (accelerator + cpu) time.
            min_accelerator_micros: minimum accelerator time.
            min_cpu_micros: minimum cpu time.

        Returns:
            self
        """
        return self._set(
            min_micros=min_micros,
            min_accelerator_micros=min_accelerator_micros,
            min_cpu_micros=min_cpu_micros,
        )

    def with_min_parameters(self, min_params: int) -> ProfileOptionBuilder:
        """Shows only nodes holding at least ``min_params`` parameters.

        Returns:
            self
        """
        return self._set(min_params=min_params)

    def with_min_occurrence(self, min_occurrence: int) -> ProfileOptionBuilder:
        """Shows only nodes aggregating at least ``min_occurrence`` graph nodes.

        Returns:
            self
        """
        return self._set(min_occurrence=min_occurrence)

    def with_min_float_operations(self, min_float_ops: int) -> ProfileOptionBuilder:
        """Shows only nodes with at least ``min_float_ops`` float operations.

        Returns:
            self
        """
        return self._set(min_float_ops=min_float_ops)

    def with_accounted_types(self, account_type_regexes: Sequence[str]) -> ProfileOptionBuilder:
        """Accounts only nodes having an op type (or device/custom type) matching a regex.

        Args:
            account_type_regexes: regexes, e.g. ``['.*gpu:0.*']``; shallow-copied.

        Returns:
            self
        """
        return self._set(account_type_regexes=copy.copy(account_type_regexes))

    def with_node_names(
        self,
        start_name_regexes: Sequence[str] | None = None,
        show_name_regexes: Sequence[str] | None = None,
        hide_name_regexes: Sequence[str] | None = None,
        trim_name_regexes: Sequence[str] | None = None,
    ) -> ProfileOptionBuilder:
        """Selects shown nodes by name; only the arguments given (not None) change.

        Args:
            start_name_regexes: start showing at nodes matching one of these.
            show_name_regexes: show nodes matching one of these...
            hide_name_regexes: ...unless they match one of these.
            trim_name_regexes: stop descending at nodes matching one of these.

        Returns:
            self
        """
        given = {
            "start_name_regexes": start_name_regexes,
            "show_name_regexes": show_name_regexes,
            "hide_name_regexes": hide_name_regexes,
            "trim_name_regexes": trim_name_regexes,
        }
        return self._set(**{k: copy.copy(v) for k, v in given.items() if v is not None})

    def account_displayed_op_only(self, is_true: bool) -> ProfileOptionBuilder:
        """Whether totals count only the nodes that end up displayed.

        Args:
            is_true: stored as given.

        Returns:
            self
        """
        return self._set(account_displayed_op_only=is_true)

    # ------------------------------------------------------------------ output

    def with_empty_output(self) -> ProfileOptionBuilder:
        """Produces no output (``none``); the returned proto is still filled."""
        return self._set(output="none")

    def with_stdout_output(self) -> ProfileOptionBuilder:
        """Prints the report to stdout."""
        return self._set(output="stdout")

    def with_file_output(self, outfile: str) -> ProfileOptionBuilder:
        """Writes the report to ``outfile`` (``file:outfile=...``)."""
        return self._set(output=f"file:outfile={outfile}")

    def with_timeline_output(self, timeline_file: str) -> ProfileOptionBuilder:
        """Writes a chrome-trace timeline JSON (``timeline:outfile=...``)."""
        return self._set(output=f"timeline:outfile={timeline_file}")

    def with_pprof_output(self, pprof_file: str) -> ProfileOptionBuilder:
        """Writes a gzipped pprof profile (code view only; ``pprof:outfile=...``)."""
        return self._set(output=f"pprof:outfile={pprof_file}")

    # ------------------------------------------------------------------ display

    def order_by(self, attribute: str) -> ProfileOptionBuilder:
        """Sorts siblings by ``attribute`` (e.g. ``micros``, ``bytes``, ``params``).

        Returns:
            self
        """
        return self._set(order_by=attribute)

    def select(self, attributes: Sequence[str]) -> ProfileOptionBuilder:
        """Chooses the attributes shown for each node; shallow-copied.

        Returns:
            self
        """
        return self._set(select=copy.copy(attributes))

    def with_user_code(
        self,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        *,
        enabled: bool = True,
    ) -> ProfileOptionBuilder:
        """Turns on the code view's user-code mode (not in TensorFlow's builder).

        Frames of TensorFlow, Keras, absl, the standard library and installed
        packages are folded into the nearest user frame that called them (see
        docs/views/code.md). The dict gets a ``user_code`` key, which TensorFlow's
        profiler ignores.

        Args:
            include: RE2 patterns (file path or function name) of frames that are
                user code even inside a library path.
            exclude: RE2 patterns of frames that are library code; wins over
                ``include``.
            enabled: False removes the key again (tfprof's view).

        Returns:
            self
        """
        if not enabled:
            self._options.pop("user_code", None)
            return self
        return self._set(user_code={"include": list(include), "exclude": list(exclude)})

    def with_step(self, step: int) -> ProfileOptionBuilder:
        """Chooses the profile step to show; -1 averages all steps.

        Returns:
            self
        """
        return self._set(step=step)
