"""XlaCompatibilityChecker: which ops keep the profiled graph from XLA JIT compilation.

tfprof_lite's own checker (TensorFlow has none). It is in the registry
(:data:`tfprof_lite.advisor.CHECKERS`) but not in ``ALL_ADVICE``: name it
explicitly, e.g. ``profiler.advise({"XlaCompatibilityChecker": {}})`` or
``tfprof-lite advise PROFILE --checker XlaCompatibilityChecker``.

Contract:

* It reads what :func:`tfprof_lite.capture.xla_compat.annotate` stored in the
  profile's op log (``_xla_compatible:<target>`` / ``_xla_incompatible:<target>``
  types, see :mod:`tfprof_lite.analysis.xla_compat`); it never imports
  TensorFlow. A profile without that data gets one report saying how to record it.
* Options (strings): ``target`` (``XLA_CPU_JIT`` or ``XLA_GPU_JIT``; default: the
  first target the profile carries), ``scope_depth`` (name-scope depth of the
  per-scope shares, default ``1``), ``max_ops`` (ops listed per category,
  default ``10``).
* Reports, in order: the summary (compatible share of compute ops, incompatible
  count and op types, host-side ops left out); one line per incompatible op
  type with the reason; the ops that split or block a JIT cluster; one line per
  scope below 100 %; the host-side ops by kind; the number of compilable
  segments.
* An XSpace profile (TF2, Keras, JAX) has no TF1 graph to annotate: one report
  says why the checker does not apply (:data:`NOT_APPLICABLE`) and what is true
  for that kind (JAX compiles every jitted function with XLA; on TF2,
  ``tf.function(jit_compile=True)`` names the ops XLA cannot compile).
"""

from __future__ import annotations

from tfprof_lite.advisor.base import Checker
from tfprof_lite.analysis.profile_kind import profile_kind
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model.profile import ProfileModel

__all__ = ["NOT_APPLICABLE", "TAG_PREFIX", "XlaCompatibilityChecker"]

#: What every op-log type of :mod:`tfprof_lite.analysis.xla_ops` starts with
#: (``TAG_COMPATIBLE``, ``TAG_INCOMPATIBLE``, ...): a profile with no such type
#: carries no XLA data, and its check needs no import of the analysis.
TAG_PREFIX = "_xla_"

_NO_DATA = (
    "no XLA compatibility data in this profile; record it while the graph is live "
    "with tfprof_lite.capture.xla_compat.annotate(profiler) (see docs/xla_compat.md)"
)

#: Profile kind -> the one report of an XSpace profile.
NOT_APPLICABLE = {
    "jax": "not applicable to a JAX profile: JAX compiles every jitted function with XLA "
    "(its programs are in the profile: tfprof-lite op-profile, tfprof-lite memory-viewer)",
    "tf2": "not applicable to a TF2 XSpace: there is no TF1 graph to check; compile the "
    "function with tf.function(jit_compile=True) and XLA names the ops it cannot compile",
}


class XlaCompatibilityChecker(Checker):
    """XLA kernel coverage of the profiled graph, per scope, with the blocking ops."""

    name = "XlaCompatibilityChecker"
    option_names = ("target", "scope_depth", "max_ops")

    def configure(self, options: dict[str, str]) -> None:
        """Read ``target``, ``scope_depth`` and ``max_ops``."""
        self.target = options.get("target")
        if self.target is not None:
            self._check_target(self.target)
        self.depth = self.int_option(options, "scope_depth", 1, minimum=1)
        self.max_ops = self.int_option(options, "max_ops", 10)

    def _check_target(self, target: str) -> None:
        from tfprof_lite.analysis.xla_ops import TARGETS

        if target not in TARGETS:
            raise InvalidOptionError(
                f"{self.name}: target must be one of {', '.join(TARGETS)}, got {target!r}"
            )

    def check(self, model: ProfileModel) -> list[str]:
        """The report lines (one explanatory line when the profile has no XLA data)."""
        kind = profile_kind(model)
        if kind in NOT_APPLICABLE:
            return [NOT_APPLICABLE[kind]]
        if not any(tag.startswith(TAG_PREFIX) for types in model.op_types for tag in types):
            return [_NO_DATA]
        from tfprof_lite.analysis.xla_compat import captured_targets, report_from_model

        report = report_from_model(model, self.target, self.depth)
        if report is not None:
            return report.advice_lines(self.max_ops)
        captured = captured_targets(model)
        if captured:
            return [
                f"no XLA compatibility data for {self.target} in this profile "
                f"(it has: {', '.join(captured)})"
            ]
        return [_NO_DATA]
