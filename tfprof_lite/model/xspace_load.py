"""Finding and loading XSpace files: a ``*.xplane.pb``, a run directory or a logdir.

The profilers write ``LOGDIR/plugins/profile/<run>/<host>.xplane.pb``. Any of
these three names a profile:

* the file itself (recognised by its content, whatever its name);
* a run directory (``plugins/profile/<run>/``), one file per host;
* a TensorBoard logdir (or its ``plugins/profile``): the newest run (run
  directories are named by their start time, so the last name in order),
  or the run named by ``run``.

:func:`xspace_hosts` resolves a path to ``{host: file}``; :func:`load_model`
reads one host's file into a new :class:`ProfileModel`.
"""

from __future__ import annotations

import os

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.xspace import add_plan, plan_steps
from tfprof_lite.proto.xplane import XSpaceColumns, decode_xspace, decode_xspace_file

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

SUFFIX = ".xplane.pb"
_PROFILE_DIR = os.path.join("plugins", "profile")
_SNIFF = 1 << 16
#: The event stats the conversion reads (:mod:`tfprof_lite.model.xspace_events`,
#: :mod:`tfprof_lite.model.xspace_memory`): only these are decoded. Most of a
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


def _host_files(run_dir: str) -> dict[str, str]:
    return {
        entry[: -len(SUFFIX)]: os.path.join(run_dir, entry)
        for entry in sorted(os.listdir(run_dir))
        if entry.endswith(SUFFIX) and os.path.isfile(os.path.join(run_dir, entry))
    }


def _runs_root(path: str) -> str | None:
    """The ``plugins/profile`` folder of a logdir (or ``path`` itself when it is one)."""
    for candidate in (os.path.join(path, _PROFILE_DIR), path):
        if os.path.isdir(candidate) and any(
            _host_files(os.path.join(candidate, run))
            for run in os.listdir(candidate)
            if os.path.isdir(os.path.join(candidate, run))
        ):
            return candidate
    return None


def is_xspace_dir(path: str) -> bool:
    """Whether directory ``path`` is a run directory, a logdir with profiles, or
    a ``plugins/profile`` folder (or such a folder without any profile)."""
    if not os.path.isdir(path):
        return False
    if _host_files(path) or os.path.isdir(os.path.join(path, _PROFILE_DIR)):
        return True
    return os.path.basename(os.path.normpath(path)) == "profile" and _runs_root(path) is not None


def is_xspace_file(path: str) -> bool:
    """Whether regular file ``path`` is named ``*.xplane.pb`` or holds an XSpace."""
    if path.endswith(SUFFIX):
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF + 1)
    except OSError:
        return False
    if len(head) > _SNIFF:  # too large to sniff by a prefix; trust the full parse later
        return False
    from tfprof_lite.proto.kinds import looks_like_xspace  # protobuf: only for unnamed files

    return looks_like_xspace(head)


def xspace_hosts(path: str, run: str | None = None) -> dict[str, str]:
    """``{host: file}`` for ``path`` (a file, run directory or logdir).

    Raises:
        InvalidInputError: a directory with no profile, or no run ``run``.
    """
    if not os.path.isdir(path):
        name = os.path.basename(path)
        return {name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name: path}
    here = _host_files(path)
    if here and run is None:
        return here
    root = _runs_root(path)
    if root is None:
        raise InvalidInputError(
            f"{path}: no *.xplane.pb here nor under plugins/profile/<run>/; "
            "pass a TensorBoard logdir the profiler wrote to, a run directory or a file"
        )
    runs = sorted(
        r
        for r in os.listdir(root)
        if os.path.isdir(os.path.join(root, r)) and _host_files(os.path.join(root, r))
    )
    chosen = runs[-1] if run is None else run
    if chosen not in runs:
        raise InvalidInputError(
            f"{path}: no run {chosen!r} with profiles (runs: {', '.join(runs)}); "
            "pick one with --run"
        )
    return _host_files(os.path.join(root, chosen))


def pick_host(hosts: dict[str, str], host: str | None, where: str) -> dict[str, str]:
    """``hosts`` cut down to ``host`` (all when None).

    Raises:
        InvalidInputError: no host of that name.
    """
    if host is None:
        return hosts
    if host not in hosts:
        raise InvalidInputError(
            f"{where}: no host {host!r} in this profile (hosts: {', '.join(sorted(hosts))})"
        )
    return {host: hosts[host]}


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
