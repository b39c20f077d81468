"""Finding and loading XSpace files: a ``*.xplane.pb``, a run directory or a logdir.

The profilers write ``LOGDIR/plugins/profile/<run>/<host>.xplane.pb``. Any of
these three names a profile:

* the file itself (recognised by its content, whatever its name);
* a run directory (``plugins/profile/<run>/``), one file per host;
* a TensorBoard logdir (or its ``plugins/profile``), or a folder with logdirs
  a few levels below it (Keras' ``LOGDIR/train``): the newest run (run
  directories are named by their start time, so the last name in order),
  or the run named by ``run`` (:mod:`tfprof_lite.formats.xspace.read.runs`).

:func:`xspace_hosts` resolves a path to ``{host: file}``; :func:`load_model`
reads one host's file into a new :class:`ProfileModel`.
"""

from __future__ import annotations

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.read import runs as xspace_runs
from tfprof_lite.formats.xspace.read.conversion import add_plan, plan_steps
from tfprof_lite.formats.xspace.read.window import bind_steps
from tfprof_lite.formats.xspace.wire.columns import XSpaceColumns
from tfprof_lite.formats.xspace.wire.decode import decode_xspace, decode_xspace_file
from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "EVENT_STATS",
    "SUFFIX",
    "is_xspace_dir",
    "is_xspace_file",
    "load_model",
    "model_from_bytes",
    "pick_host",
    "xspace_hosts",
]

SUFFIX = xspace_runs.SUFFIX
is_xspace_dir = xspace_runs.is_xspace_dir
is_xspace_file = xspace_runs.is_xspace_file
pick_host = xspace_runs.pick_host
#: The event stats the conversion reads (:mod:`tfprof_lite.formats.xspace.read.events`,
#: :mod:`tfprof_lite.formats.xspace.read.memory`): only these are decoded. Most of a
#: large file's stats are others (occupancy, scope ids, allocator state...).
EVENT_STATS = frozenset(
    {
        # xspace_events
        "tf_op", "hlo_op", "hlo_module", "kernel_details", "memcpy_details", "eager_op",
        "correlation_id", "_r", "step_num", "program_id", "run_id",
        # xspace_memory
        "allocation_bytes", "requested_bytes", "addr", "bytes_allocated", "bytes_reserved",
        "data_type", "allocator_name", "shape",
    }
)  # fmt: skip


def xspace_hosts(path: str, run: str | None = None) -> dict[str, str]:
    """``{host: file}`` for ``path`` (a file, run directory, logdir or a folder
    above logdirs: :func:`~tfprof_lite.formats.xspace.read.runs.pick_run`).

    Raises:
        InvalidInputError: a directory with no profile, or no run ``run``.
    """
    return xspace_runs.pick_run(path, run).hosts


def model_from_bytes(raw: bytes | bytearray | memoryview, what: str) -> ProfileModel:
    """A new model holding the XSpace ``raw``.

    Raises:
        InvalidInputError: not a readable XSpace, or one without any event.
    """
    return _model_from_columns(decode_xspace(raw, what, EVENT_STATS), what)


def _model_from_columns(cols: XSpaceColumns, what: str) -> ProfileModel:
    if not len(cols.event_line):
        planes = ", ".join(cols.plane_name) or "none"
        raise InvalidInputError(
            f"{what}: the profile holds no events (planes: {planes}); "
            "was anything run while the profiler was on?"
        )
    # The columns are the caller's no more (see load_model): their stats go
    # once read, the rest before the model takes the steps.
    plan = plan_steps(cols, release=True)
    del cols
    model = ProfileModel()
    add_plan(plan, model, release=True)
    window, plan.window = plan.window, None
    if window is not None:
        model.event_window = bind_steps(window, model)
    return model


def load_model(path: str, max_input_size: int | str | None = None) -> ProfileModel:
    """The model of the XSpace file ``path`` (read through the bounded reader).

    The file's bytes are given back as they are decoded (natively; else dropped
    once decoded), before the conversion builds the model: a large file is not
    held next to its columns.
    """
    return _model_from_columns(
        decode_xspace_file(path, "an XSpace (*.xplane.pb)", EVENT_STATS, max_input_size), path
    )
