"""Where the steps of an XSpace are: step markers, or steps inferred from calls.

:func:`find_steps` returns the step roots of a file, host events that each mark
one step, and a sentence saying how they were found:

1. step markers: host events with integer ``_r`` and ``step_num`` stats (what
   ``tf.profiler.experimental.Trace(name, step_num=i, _r=1)`` and JAX's
   ``StepTraceAnnotation`` write), or named ``TraceContext`` (the legacy
   marker; TensorFlow's ``FunctionRun`` has ``_r`` alone and is no step); their
   ``step_num`` numbers the steps;
2. Keras' own batch markers: ``Profiled batch`` events with ``step_num`` (no
   ``_r``), which its TensorBoard callback writes around each profiled batch;
3. otherwise inferred, first of: one Keras ``multi_step_on_iterator`` call (the
   function's event, or ``EagerExecute`` with that ``eager_op``); one run of
   the XLA program that is the training step
   (:mod:`tfprof_lite.formats.xspace.read.infer`, which may find none and say why);
   one ``SessionRun``. The source says how many and how sure
   (``inferred: 12 runs of XLA program jit_train_step, one per step
   (confidence high: step times vary 3%)``).

Roots nested in an earlier root are dropped. A marked step then covers the
events launched inside its root and those launched in the gap before it (the
host's work for that step before it entered the marker: input, dispatch); an
inferred step runs from the end of the previous one (one loop period); see
:func:`tfprof_lite.formats.xspace.read.conversion.convert`.

A step root is no op: it becomes no graph node and no record. Each step keeps
it as its :class:`StepSpan` (the root's name and the step's window,
:mod:`tfprof_lite.formats.xspace.read.rows`), which the model gives its steps
(``StepExecs.span``, :func:`tfprof_lite.model.step_batch.add_spans`): step
time, the overview, the input pipeline and the traces read the step
boundaries from there.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.calls import host_programs, outermost, program_of, program_runs
from tfprof_lite.formats.xspace.read.events import EventTable, distinct_codes
from tfprof_lite.formats.xspace.read.infer import MIN_RUNS, program_steps, regularity
from tfprof_lite.model.step_batch import add_spans
from tfprof_lite.model.step_spans import StepSpan

__all__ = [
    "StepRoots",
    "StepSpan",
    "add_spans",
    "find_steps",
    "host_programs",
    "outermost",
    "program_of",
    "program_runs",
    "step_of",
]

I64 = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_KERAS = "multi_step_on_iterator"
_KERAS_BATCH = "Profiled batch"
_KERAS_EAGER = "__inference_multi_step_on_iterator"


class StepRoots:
    """The step roots (event rows, by start), their step numbers and how found.

    ``ends``: per root, the end (ps) of the program run it launched when that
    run's events are not its records' (XLA's CPU runtime; -1: none);
    ``ops``: per root, the events of that run (-1: unknown); ``contiguous``:
    inferred steps, each from the end of the previous one (one loop period).
    """

    def __init__(
        self,
        events: list[int],
        numbers: list[int],
        source: str,
        ends: list[int] | None = None,
        ops: list[int] | None = None,
        contiguous: bool = False,
    ) -> None:
        self.events = events
        self.numbers = numbers
        self.source = source
        self.ends = ends or [-1] * len(events)
        self.ops = ops or [-1] * len(events)
        self.contiguous = contiguous

    def __len__(self) -> int:
        return len(self.events)


def _by_meta(table: EventTable, host: I64, test: Callable[[str], bool]) -> BoolArray:
    """``test(name)`` of each host event's name, decided once per event metadata."""
    if not len(host):
        return np.zeros(0, dtype=bool)
    names = table.cols.meta_name
    used, inverse = distinct_codes(table.cols.event_meta[host], len(names))
    flags = [test(names[m] if m >= 0 else "") for m in used.tolist()]
    return np.asarray(flags, dtype=bool)[inverse.reshape(-1)]


def _named(table: EventTable, host: I64, name: str) -> BoolArray:
    return _by_meta(table, host, lambda text: text == name)


def _markers(table: EventTable, host: I64) -> list[int]:
    marked = (table.has_int["_r"] & table.has_int["step_num"])[host]
    return list(host[marked | _named(table, host, "TraceContext")].tolist())


def _keras(table: EventTable, host: I64) -> list[int]:
    eager = np.zeros(len(host), dtype=bool)
    codes = table.codes["eager_op"][host]
    if len(host):
        strings = table.cols.strings
        used, inverse = distinct_codes(codes, len(strings))
        keras = [c >= 0 and strings[c].startswith(_KERAS_EAGER) for c in used.tolist()]
        eager = np.asarray(keras, dtype=bool)[inverse.reshape(-1)]
    calls = _named(table, host, _KERAS) | (_named(table, host, "EagerExecute") & eager)
    return list(host[calls].tolist())


def _numbers(table: EventTable, roots: list[int]) -> list[int]:
    present = table.has_int["step_num"]
    numbers: list[int] = table.ints.at("step_num", np.asarray(roots, dtype=np.int64)).tolist()
    if all(present[r] for r in roots) and len(set(numbers)) == len(numbers):
        return numbers
    return list(range(len(roots)))


def find_steps(table: EventTable) -> StepRoots:
    """The step roots of the file (empty when it has none; the source says why)."""
    host = table.host_events()
    marked = outermost(table, _markers(table, host))
    if marked:
        names = sorted({table.names[e] for e in marked})
        return StepRoots(marked, _numbers(table, marked), f"step markers ({', '.join(names)})")
    batch = _named(table, host, _KERAS_BATCH) & table.has_int["step_num"][host]
    batches = outermost(table, host[batch].tolist())
    if batches:
        return StepRoots(batches, _numbers(table, batches), f"Keras batch markers ({_KERAS_BATCH})")
    keras = outermost(table, _keras(table, host))
    if keras:
        return _calls(table, keras, f"Keras {_KERAS} call")
    inferred = program_steps(table, host)
    if inferred is not None and inferred.runs is not None:
        runs = inferred.runs
        return StepRoots(runs.roots, list(range(len(runs))), inferred.words, runs.ends,
                         runs.ops, contiguous=True)  # fmt: skip
    sessions = outermost(table, host[_named(table, host, "SessionRun")].tolist())
    if sessions:
        return _calls(table, sessions, "SessionRun call")
    why = inferred.words if inferred is not None else _NOTHING
    return StepRoots([], [], f"{NO_STEPS}: no step markers, and {why}")


#: How the source of a file without steps begins.
NO_STEPS = "no steps found"
_NOTHING = "no Keras, XLA program or SessionRun calls to infer them from"


def _calls(table: EventTable, roots: list[int], what: str) -> StepRoots:
    """One inferred step per call of ``roots`` (a Keras train function, a
    ``SessionRun``), with how regular they are."""
    n = len(roots)
    if n < MIN_RUNS:
        sure = f"confidence medium: {n} call{'s' if n != 1 else ''}"
    else:
        sure = regularity([int(table.start[r]) for r in roots]).words(n)
    words = f"inferred: {n} {what}{'s' if n != 1 else ''}, one per step ({sure})"
    return StepRoots(roots, list(range(n)), words, contiguous=True)


def step_of(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each time, the step it belongs to (-1: none).

    A time inside root ``i`` belongs to step ``i``; a time in the gap after root
    ``i`` and before root ``i + 1`` belongs to step ``i + 1`` (the host's work
    for the next step); times before the first root or after the last one end
    belong to none.
    """
    if not len(starts):
        return np.zeros(len(times), dtype=np.int64)
    before = np.searchsorted(starts, times, side="right") - 1
    inside = (before >= 0) & (times <= ends[np.maximum(before, 0)])
    out = np.where(inside, before, before + 1)
    out[(out >= len(starts)) | (out < 0)] = -1
    out[times < starts[0]] = -1
    return out.astype(np.int64)
