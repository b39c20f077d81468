"""tf.data's iterator stages and the parts of an XSpace's steps, for the
input-pipeline analysis (:mod:`tfprof_lite.analysis.input_pipeline`).

An XSpace's steps are split by :mod:`tfprof_lite.formats.xspace.read.input` into
``input``, ``device``, ``copies``, ``launch``, ``idle`` and ``host``. The
input share of a step is its ``input`` part; in a profile of XLA programs
without any tf.data iterator or input op (a JAX loop making its batches with
NumPy or Python) also its ``host`` part: the step's own thread making the
next batch.

The stages are ranked by self time; the slowest one's kind picks the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Stage", "host_makes_batches", "stage_fix", "stages_of"]

_READS = ("TFRecord", "TextLine", "FixedLengthRecord", "Interleave", "FlatMap", "ParallelInter")


@dataclass(frozen=True)
class Stage:
    """One ``Iterator::...`` stage: total and self µs per step."""

    name: str
    micros: int
    self_micros: int

    @property
    def kind(self) -> str:
        """The last part of the name (``MapAndBatch``, ``Prefetch``...)."""
        return self.name.rsplit("::", 1)[-1]


def stages_of(trace: Any) -> list[Stage]:
    """The stages of ``trace`` (a :class:`~tfprof_lite.formats.xspace.read.input.TraceInput`),
    per step, slowest self time first."""
    n = max(1, len(trace.steps))
    out = [Stage(name, t // n, s // n) for name, (t, s) in trace.stages.items()]
    return sorted(out, key=lambda s: (-s.self_micros, s.name))


def host_makes_batches(trace: Any, has_input_ops: bool) -> bool:
    """True when the steps' own thread makes the batches: no tf.data stage
    and no input op anywhere (a JAX or plain Python loop)."""
    return not trace.stages and not has_input_ops


def stage_fix(slow: Stage, stages: list[Stage]) -> str:
    """The fix that fits the slowest stage ``slow`` among ``stages``."""
    kinds = {s.kind for s in stages}
    kind = slow.kind
    if kind in ("Map", "ParallelMap", "MapAndBatch", "ParallelMapV2"):
        fix = (
            f"the map of {slow.name} is the slowest stage: "
            "use .map(fn, num_parallel_calls=tf.data.AUTOTUNE) (and deterministic=False "
            "if order does not matter), make fn cheaper (vectorize it: batch before map), "
            "and add .cache() after it when its output is deterministic and fits"
        )
    elif any(kind.startswith(r) for r in _READS):
        fix = (
            f"reading ({slow.name}) is the slowest stage: read files in parallel with "
            ".interleave(..., num_parallel_calls=tf.data.AUTOTUNE) and "
            ".cache() the data when it fits in memory or on local disk"
        )
    elif kind.startswith("Generator") or kind.startswith("FromGenerator"):
        fix = f"the Python generator ({slow.name}) is the slowest stage: move its work to tf.data"
    elif kind == "Batch":
        fix = (
            f"batching ({slow.name}) is the slowest stage: "
            "use .batch(n, num_parallel_calls=tf.data.AUTOTUNE)"
        )
    else:
        fix = f"{slow.name} is the slowest stage: look at what it runs"
    if not any(k.startswith("Prefetch") for k in kinds):
        fix += "; add .prefetch(tf.data.AUTOTUNE) at the end of the pipeline"
    return fix
