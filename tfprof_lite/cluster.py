"""Profiles of a whole TF1 cluster: load one profile per task, merge them.

:func:`merge` is the API: it takes profiles of several tasks (paths of files or
directories, :class:`~tfprof_lite.profiler.Profiler` s, or
:class:`~tfprof_lite.model.cluster.TaskInput` s) and returns a
:class:`~tfprof_lite.profiler.Profiler` on the merged profile, whose
``cluster`` attribute is the :class:`~tfprof_lite.model.cluster_merge.ClusterProfile`
(tasks, clock offsets, transfers). Every view, output and the advisor work on
it; node names carry their task (``job:worker/replica:0/task:1/MatMul``)
unless ``by_name=True``. Inputs of one task (two runs of one program) are no
cluster: :func:`merge` refuses them (:class:`~tfprof_lite.errors.SameTaskError`)
unless ``allow_same_task=True``.

What a path may be (:func:`load_inputs`):

* a directory written by a task-tagged capture (``ProfileContext(...,
  task=...)`` or ``ProfilerHook(..., task=...)``): per task a sidecar
  ``task.<tag>.json`` (``{"task": "/job:worker/replica:0/task:1", "host": ...,
  "steps": {"<step>": <global step>}}``) and its RunMetadata files
  ``run_meta.<tag>.<step>.pb``. One directory may hold several tasks (a shared
  directory) and gives one input per sidecar;
* a directory of ``run_meta_<step>`` files (binary or text RunMetadata), or of
  ``profile_<step>`` files (the newest one is taken);
* a single ProfileProto or RunMetadata file (step 0 for a RunMetadata), or an
  XSpace (``*.xplane.pb``);
* a TensorBoard logdir or profiler run directory: one input per host's XSpace
  of its newest run (``docs/xspace.md``); so is, when none of the above is in
  it, a folder with logdirs a few levels below it (Keras' ``LOGDIR/train``).

RunMetadata files are read when the merge asks for them (twice: a scan, then
the merge itself), never all at once. RunMetadata inputs keep the
``RecvTensor`` records of tensor transfers between tasks (network time, bytes,
the clock estimate, flow arrows); a ProfileProto does not hold them, so a
cluster merged from ``profile_<step>`` files has op times per task but no
network view.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

from tfprof_lite.base.reading import read_input
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats import resolve
from tfprof_lite.ingest import Ingest
from tfprof_lite.model.cluster import TaskInput, normalize_task
from tfprof_lite.model.cluster_merge import ClusterProfile, merge_inputs
from tfprof_lite.profiler import Profiler
from tfprof_lite.proto import kinds
from tfprof_lite.proto import messages as pb
from tfprof_lite.proto.codec import parse
from tfprof_lite.proto.steps import StepColumns, decode_step_columns

__all__ = ["SIDECAR_RE", "load_inputs", "load_task", "merge", "merged_profiler", "xspace_tasks"]

#: A task sidecar in a capture directory: ``task.<tag>.json``.
SIDECAR_RE = resolve.SIDECAR
_TAGGED_META = r"run_meta\.{tag}\.(\d+)\.pb"
_TEXT_SUFFIXES = (".pbtxt", ".txt", ".textproto")


def _run_meta(path: str) -> Any:
    data = read_input(path, "a RunMetadata")
    if path.endswith(_TEXT_SUFFIXES) or (data[:1].isalpha() if data else False):
        from google.protobuf import text_format

        try:
            return text_format.Parse(bytes(data).decode("utf-8"), pb.RunMetadata())
        except (UnicodeDecodeError, text_format.ParseError):
            pass
    return parse(pb.RunMetadata, data, path)


def _from_run_metas(label: str, files: dict[int, str]) -> TaskInput:
    """One input from RunMetadata files (file of step s -> step s), read when
    the merge asks for a step (once to scan, once to merge)."""

    def read(step: int) -> list[StepColumns]:
        path = files[step]
        data = read_input(path, "a RunMetadata")
        if path.endswith(_TEXT_SUFFIXES) or data[:1].isalpha():
            data = _run_meta(path).SerializeToString()
        return [decode_step_columns(data, parse=lambda raw: parse(pb.RunMetadata, raw, path))]

    return TaskInput(label=label, reader=read, steps=sorted(files))


def _empty_profiler() -> Profiler:
    """A profiler that follows no graph (nodes come from the RunMetadata)."""
    prof = Profiler.__new__(Profiler)
    prof._ingest = Ingest()
    prof._views = {}
    return prof


def _sidecar(path: str) -> dict[str, Any]:
    try:
        data = json.loads(read_input(path, "a task sidecar").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise InvalidInputError(f"{path}: not a task sidecar ({err})") from err
    if not isinstance(data, dict) or not isinstance(data.get("task", ""), str):
        raise InvalidInputError(f"{path}: not a task sidecar (no task string)")
    steps = data.get("steps", {})
    try:
        data["steps"] = {int(k): int(v) for k, v in dict(steps).items()}
    except (TypeError, ValueError) as err:
        raise InvalidInputError(f"{path}: not a task sidecar (steps: {err})") from err
    return data


def _tagged(directory: str, entries: list[str]) -> list[TaskInput]:
    out = []
    for entry in sorted(entries):
        match = SIDECAR_RE.fullmatch(entry)
        if match is None:
            continue
        side = _sidecar(os.path.join(directory, entry))
        pattern = re.compile(_TAGGED_META.format(tag=re.escape(match["tag"])))
        files = {
            int(m[1]): os.path.join(directory, e) for e in entries if (m := pattern.fullmatch(e))
        }
        inp = _from_run_metas(os.path.join(directory, match["tag"]), files)
        inp.task = normalize_task(side.get("task") or "")
        inp.host = side.get("host") or None
        inp.step_keys = {k: v for k, v in side["steps"].items() if k in files}
        # a ProfilerHook capture names its files by global step
        inp.global_numbers = bool(inp.step_keys) and all(k == v for k, v in inp.step_keys.items())
        out.append(inp)
    return out


def xspace_tasks(hosts: dict[str, str]) -> list[TaskInput]:
    """One task per host's XSpace file (``{host: file}``): task ``i`` of job
    ``localhost`` in host-name order, each on its own host's clock."""
    from tfprof_lite.formats.xspace.read import load as xspace_load

    return [
        TaskInput(
            model=xspace_load.load_model(file),
            label=file,
            task=f"/job:localhost/replica:0/task:{i}",
            host=host,
        )
        for i, (host, file) in enumerate(sorted(hosts.items()))
    ]


def load_task(path: str) -> list[TaskInput]:
    """The inputs one path holds (see the module docstring): what the input table
    (:func:`tfprof_lite.formats.resolve.identify`) says it is; a directory of a
    shared capture gives one per task.

    Raises:
        InvalidInputError: a missing path, or a directory with no profile in it.
    """
    fmt = resolve.identify(path).name
    if fmt in resolve.XSPACE_FORMATS and os.path.isdir(path):  # one task per host
        from tfprof_lite.formats.xspace.read import load as xspace_load

        return xspace_tasks(xspace_load.xspace_hosts(path))
    if fmt == "captures":
        return _tagged(path, os.listdir(path))
    if fmt == "run-metadata-files":
        entries = os.listdir(path)
        metas = {
            int(m[1]): os.path.join(path, e)
            for e in entries
            if (m := resolve.RUN_META_FILE.fullmatch(e))
        }
        return [_from_run_metas(path, metas)]
    if fmt == "saved-profiles":
        found = resolve.saved_profiles(path)
        return [TaskInput(model=Profiler.load(found[max(found)]).model, label=path)]
    if fmt == "xspace":
        return [TaskInput(model=Profiler.load(path).model, label=path)]
    data = read_input(path, "a profile")
    if not data.strip():
        raise InvalidInputError(f"{path}: the file is empty, expected a profile")
    if kinds.identify(data) == "RunMetadata":
        return [_from_run_metas(path, {0: path})]
    del data
    return [TaskInput(model=Profiler.load(path).model, label=path)]


def load_inputs(paths: Iterable[str]) -> list[TaskInput]:
    """Every input the paths hold, in order."""
    return [inp for path in paths for inp in load_task(os.fspath(path))]


def merged_profiler(cluster: ClusterProfile) -> Profiler:
    """A :class:`Profiler` on a merged profile (``.cluster`` holds the rest)."""
    prof = _empty_profiler()
    prof._ingest.model = cluster.model
    prof.cluster = cluster  # type: ignore[attr-defined]
    return prof


def _as_input(item: Any) -> list[TaskInput]:
    if isinstance(item, TaskInput):
        return [item]
    if isinstance(item, Profiler):
        return [TaskInput(model=item.model, label="profiler")]
    if isinstance(item, (str, os.PathLike)):
        return load_task(os.fspath(item))
    raise InvalidInputError(f"cannot merge a {type(item).__name__}: give paths or Profilers")


def merge(
    profiles: Iterable[Any],
    *,
    by_name: bool = False,
    steps: str = "auto",
    same_clock: bool = False,
    allow_same_task: bool = False,
) -> Profiler:
    """Merge the profiles of several tasks into one :class:`Profiler`.

    Args:
        profiles: paths (files or directories, one or more tasks each),
            :class:`Profiler` s or :class:`TaskInput` s.
        by_name: add same-named nodes of different tasks up (one node per name)
            instead of keeping them apart per task.
        steps: ``"auto"``, ``"global"`` (match by recorded global step) or
            ``"local"`` (by each input's step numbers).
        same_clock: every task ran on one host: apply no clock correction.
        allow_same_task: merge inputs of one task too (two runs of one program
            are not a cluster: they are refused unless this is true).

    Returns:
        A Profiler whose ``cluster`` attribute is the
        :class:`~tfprof_lite.model.cluster_merge.ClusterProfile`.

    Raises:
        SameTaskError: two inputs are of one task (see ``allow_same_task``).
        InvalidInputError: an input that cannot be read.
    """
    inputs = [inp for item in profiles for inp in _as_input(item)]
    cluster = merge_inputs(
        inputs,
        by_name=by_name,
        step_basis=steps,
        same_clock=same_clock,
        allow_same_task=allow_same_task,
    )
    return merged_profiler(cluster)
