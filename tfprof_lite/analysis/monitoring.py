"""Live-monitoring records: window statistics, trace-sample metrics, line format.

Pure functions and dataclasses shared by the live monitor
(:class:`tfprof_lite.session.monitor.Monitor`) and the ``tfprof-lite monitor``
command; no TensorFlow.

Contract:

* A *window* is ``every`` consecutive steps (``Session.run`` or session-callable
  calls). :func:`window_stats` turns the wall-clock durations of its untraced
  runs into mean/min/max milliseconds; traced runs (FULL_TRACE, by the monitor's
  sampler, a ``ProfileContext`` or the caller) are counted apart and never
  timed, so a trace never inflates the step time.
* A *sample* is one traced step analysed with :func:`tfprof_lite.analysis.overview`
  (:func:`sample_metrics`): ``util`` = share of the step's span in which at
  least one op ran on an accelerator stream (or, without accelerators, on a
  CPU device) = ``1 - device_idle`` (``1 - host_idle``); ``input_wait`` = share
  of the step spent in input ops (:mod:`tfprof_lite.analysis.input_pipeline`);
  ``devices`` = distinct canonical devices that ran ops.
* :class:`WindowRecord` is one JSON line of ``monitor.jsonl``
  (``{"event": "window", ...}``, :meth:`WindowRecord.to_dict`) and one printed
  line (:meth:`WindowRecord.to_line`): ``tfprof_lite monitor: key=value ...``,
  level 1 with ``runs`` (the monitor's numbers of the window's runs: it counts
  ``Session.run`` calls, not training steps), ``step`` (mean time per run),
  ``util`` (from the latest sample, possibly taken in an earlier window; ``n/a``
  before any) and, on the line of the window that took the sample only,
  ``util_step`` (the monitor's number of the traced run ``util`` was measured
  on); level 2 adds ``min``, ``max``, ``in_run``, ``host_idle``,
  ``device_idle``, ``input_wait`` and ``devices``. Missing values print as
  ``n/a``. :func:`parse_line` reads such a line back. The JSON records keep
  their field names (``steps``, ``first_step``, ``sample.step``).
* :func:`summarize` folds the window records of one run into a
  :class:`MonitorSummary` (mean weighted by timed steps, extreme min/max, the
  latest sample), printed by :meth:`MonitorSummary.to_line` (``runs=`` the
  number of runs counted, ``util_step`` once).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from tfprof_lite.analysis.overview import overview
from tfprof_lite.model.devices import is_canonical_device
from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "LINE_PREFIX",
    "SCHEMA_VERSION",
    "SUMMARY_PREFIX",
    "MonitorSummary",
    "SampleMetrics",
    "WindowRecord",
    "WindowStats",
    "parse_line",
    "sample_metrics",
    "summarize",
    "window_stats",
]

#: Version of the ``monitor.jsonl`` record layout (``"v"`` in every record).
SCHEMA_VERSION = 1
#: Start of every printed window line.
LINE_PREFIX = "tfprof_lite monitor:"
#: Start of the printed end-of-run summary line.
SUMMARY_PREFIX = "tfprof_lite monitor summary:"


@dataclass(frozen=True)
class WindowStats:
    """Wall-clock step time over the untraced runs of a window (milliseconds)."""

    timed: int = 0
    mean_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    total_ms: float = 0.0


def window_stats(durations: Sequence[float]) -> WindowStats:
    """Mean, min and max of ``durations`` (seconds) in milliseconds."""
    if not durations:
        return WindowStats()
    total = math.fsum(durations)
    return WindowStats(
        timed=len(durations),
        mean_ms=round(1000.0 * total / len(durations), 4),
        min_ms=round(1000.0 * min(durations), 4),
        max_ms=round(1000.0 * max(durations), 4),
        total_ms=round(1000.0 * total, 4),
    )


@dataclass(frozen=True)
class SampleMetrics:
    """What one traced step says about the devices (shares in 0..1).

    Attributes:
        step: the monitor's number of the traced step.
        util: busy share of the compute devices (see the module docstring).
        util_device: ``"accelerator"`` or ``"cpu"``: what ``util`` measures.
        host_idle: share of the step with no op running on a CPU device.
        device_idle: the same for accelerator streams; None without any.
        input_wait: share of the step spent in input ops.
        devices: canonical devices (``.../device:CPU:0``, ``.../GPU:1``) with ops.
        span_ms: the traced step's op span (first op start to last op end).
    """

    step: int
    util: float | None
    util_device: str
    host_idle: float | None
    device_idle: float | None
    input_wait: float
    devices: int
    span_ms: float

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> SampleMetrics:
        """The inverse of ``dataclasses.asdict`` (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in doc.items() if key in names})


def sample_metrics(model: ProfileModel, step: int) -> SampleMetrics | None:
    """The metrics of a model holding one traced step; None if it has no records."""
    view = overview(model, top=1)
    if not view.steps:
        return None
    has_accelerator = view.device_idle is not None
    idle = view.device_idle if has_accelerator else view.host_idle
    canonical = {dev for dev in view.devices if is_canonical_device(dev)}
    return SampleMetrics(
        step=step,
        util=None if idle is None else round(1.0 - idle, 4),
        util_device="accelerator" if has_accelerator else "cpu",
        host_idle=view.host_idle,
        device_idle=view.device_idle,
        input_wait=view.input.mean_share,
        devices=len(canonical),
        span_ms=round(view.avg_step_micros / 1000.0, 4),
    )


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}ms"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100.0 * value:.1f}%"


@dataclass
class WindowRecord:
    """One window of a monitored run: a ``monitor.jsonl`` line and a printed line.

    Attributes:
        run: the run's id (shared by its ``start``/``window``/``end`` records).
        window: the window's index in the run, from 0.
        first_step / last_step: the monitor's step numbers (from 0) it covers.
        steps: runs in the window; ``traced`` of them ran with FULL_TRACE.
        stats: step time of the untraced runs.
        period_ms: loop wall time per step (window wall time / steps).
        in_run: share of the window's wall time spent inside the runs.
        host_cpu: process CPU time / wall time (2.0 = two cores busy).
        sample: the most recent trace sample (possibly from an earlier window).
        time: Unix time at the window's end.
        partial: the window was cut short by the end of the run.
    """

    run: str
    window: int
    first_step: int
    last_step: int
    steps: int
    traced: int
    stats: WindowStats
    period_ms: float
    in_run: float
    host_cpu: float
    sample: SampleMetrics | None
    time: float
    partial: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to ``monitor.jsonl``."""
        doc = asdict(self)
        doc.update(doc.pop("stats"))
        return {"v": SCHEMA_VERSION, "event": "window", **doc}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> WindowRecord:
        """A record read back from ``monitor.jsonl``.

        Raises:
            KeyError / TypeError: the object is not a window record.
        """
        stat_names = {f.name for f in fields(WindowStats)}
        stats = WindowStats(**{k: doc[k] for k in stat_names if k in doc})
        sample = doc.get("sample")
        own = {f.name for f in fields(cls)} - {"stats", "sample"}
        return cls(
            stats=stats,
            sample=SampleMetrics.from_dict(sample) if sample else None,
            **{k: doc[k] for k in own if k in doc},
        )

    def to_line(self, level: int) -> str:
        """The printed line (no newline); ``level`` 1 or 2."""
        sample = self.sample
        parts = [
            LINE_PREFIX,
            f"runs={self.first_step}-{self.last_step}",
            f"step={_ms(self.stats.mean_ms)}",
        ]
        if level >= 2:
            parts += [
                f"min={_ms(self.stats.min_ms)}",
                f"max={_ms(self.stats.max_ms)}",
                f"in_run={_pct(self.in_run)}",
            ]
        new = sample is not None and self.first_step <= sample.step <= self.last_step
        parts += _util_parts(sample, new)
        if level >= 2:
            parts += _sample_parts(sample)
        return " ".join(parts)


def _util_parts(sample: SampleMetrics | None, with_step: bool) -> list[str]:
    """``util``, and with ``with_step`` ``util_step``: the traced run it was measured on."""
    if sample is None:
        return ["util=n/a"]
    util = f"util={_pct(sample.util)}"
    return [util, f"util_step={sample.step}"] if with_step else [util]


def _sample_parts(sample: SampleMetrics | None) -> list[str]:
    """The level-2 fields taken from the latest sample."""
    if sample is None:
        return ["host_idle=n/a", "device_idle=n/a", "input_wait=n/a", "devices=n/a"]
    return [
        f"host_idle={_pct(sample.host_idle)}",
        f"device_idle={_pct(sample.device_idle)}",
        f"input_wait={_pct(sample.input_wait)}",
        f"devices={sample.devices}",
    ]


def parse_line(line: str) -> dict[str, str]:
    """The ``key=value`` fields of a printed window or summary line.

    Raises:
        ValueError: the line is not a monitor line.
    """
    text = line.strip()
    for prefix in (SUMMARY_PREFIX, LINE_PREFIX):
        if text.startswith(prefix):
            body = text[len(prefix) :].split()
            return dict(part.split("=", 1) for part in body if "=" in part)
    raise ValueError(f"not a tfprof_lite monitor line: {line!r}")


@dataclass
class MonitorSummary:
    """A whole monitored run folded from its window records."""

    run: str = ""
    windows: int = 0
    steps: int = 0
    timed: int = 0
    traced: int = 0
    mean_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    in_run: float | None = None
    host_cpu: float | None = None
    sample: SampleMetrics | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``summary`` of an ``end`` record)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> MonitorSummary:
        """The inverse of :meth:`to_dict` (unknown keys ignored)."""
        names = {f.name for f in fields(cls)} - {"sample"}
        sample = doc.get("sample")
        return cls(
            sample=SampleMetrics.from_dict(sample) if sample else None,
            **{key: value for key, value in doc.items() if key in names},
        )

    def to_line(self) -> str:
        """One printed summary line (no newline)."""
        sample = self.sample
        parts = [
            SUMMARY_PREFIX,
            f"runs={self.steps}",
            f"windows={self.windows}",
            f"traced={self.traced}",
            f"step={_ms(self.mean_ms)}",
            f"min={_ms(self.min_ms)}",
            f"max={_ms(self.max_ms)}",
            f"in_run={_pct(self.in_run)}",
            *_util_parts(sample, sample is not None),
            *_sample_parts(sample),
        ]
        return " ".join(parts)


def _weighted(pairs: Iterable[tuple[float, int]]) -> float | None:
    pairs = [(value, weight) for value, weight in pairs if weight]
    total = sum(weight for _, weight in pairs)
    if not total:
        return None
    return round(math.fsum(value * weight for value, weight in pairs) / total, 4)


def summarize(records: Sequence[WindowRecord], run: str = "") -> MonitorSummary:
    """Fold the window records of one run (in order) into its summary."""
    out = MonitorSummary(run=run or (records[0].run if records else ""))
    if not records:
        return out
    timed = [r for r in records if r.stats.mean_ms is not None]
    out.windows = len(records)
    out.steps = sum(r.steps for r in records)
    out.timed = sum(r.stats.timed for r in records)
    out.traced = sum(r.traced for r in records)
    out.mean_ms = _weighted((r.stats.mean_ms or 0.0, r.stats.timed) for r in timed)
    out.min_ms = min((r.stats.min_ms for r in timed if r.stats.min_ms is not None), default=None)
    out.max_ms = max((r.stats.max_ms for r in timed if r.stats.max_ms is not None), default=None)
    out.in_run = _weighted((r.in_run, r.steps) for r in records)
    out.host_cpu = _weighted((r.host_cpu, r.steps) for r in records)
    out.sample = next((r.sample for r in reversed(records) if r.sample is not None), None)
    out.seconds = round(sum(r.period_ms * r.steps for r in records) / 1000.0, 3)
    return out
