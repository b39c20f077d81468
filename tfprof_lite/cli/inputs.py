"""Where a command's profile comes from: a saved profile, a directory, or raw protos.

Contract:

* :func:`input_options` adds the input arguments to a click command: an optional
  ``PROFILE`` (a ``profile_<step>`` file written by ``Profiler._write_profile`` /
  ``serialize_to_string()`` or by TensorFlow, or a directory of them) and, instead of
  it, ``--graph GRAPHDEF --run-meta RM1,RM2 [--op-log OPLOG]`` (TF's
  ``--graph_path``/``--run_meta_path``/``--op_log_path`` spellings work too; run
  metadata file *i* becomes step *i*, as in TF's ``profiler``).
* Every file is read once through :func:`tfprof_lite.base.reading.read_input`: only
  regular files (a directory, FIFO or device is refused before it is opened), at
  most the input limit (``--max-input-size``, ``TFPROF_LITE_MAX_INPUT_SIZE``, 2 GiB
  by default).
* Files are binary protos (``SerializeToString``) or, with a ``.pbtxt``-like suffix
  (or when they do not parse as binary but do as text), protobuf text format.
* A directory means its newest ``profile_<step>`` file (highest step), or
  ``profile_<step>`` for the ``-step``/``--step`` option when one is given.
* The profilers' own outputs (an XSpace ``*.xplane.pb``, a run folder
  ``plugins/profile/<run>/``, a TensorBoard logdir, or a folder with logdirs a
  few levels below it, as Keras' ``TensorBoard(log_dir=...)`` writes) are read
  by :mod:`tfprof_lite.cli.xspace_inputs`; a run chosen among several is named
  in one note on stderr. A Chrome trace (JAX's ``*.trace.json.gz``, any
  ``.json``/``.json.gz`` trace) is refused with one line naming the
  ``*.xplane.pb`` to pass instead. The help of every command says what PROFILE
  may be (:data:`~tfprof_lite.cli.common.PROFILE_HELP`).
* Several PROFILEs (files or directories, one or more tasks each) are the tasks
  of one distributed run: they are merged (:func:`tfprof_lite.cluster.merge`,
  ``docs/cluster.md``) into one profile whose nodes keep their task; with
  ``--by-name`` same-named nodes of every task are added up instead. PROFILEs of
  one task (two runs of one program) are no cluster: that is a
  :class:`~tfprof_lite.errors.UsageError` (exit 2) pointing to ``tfprof-lite
  diff A B``, unless ``--merge`` asks for the merge.
* :func:`load_profiler` returns a :class:`~tfprof_lite.profiler.Profiler`. Every
  failure is an :class:`~tfprof_lite.errors.InvalidInputError` (exit 1) whose one-line
  message starts with the file name and says what is wrong (missing, unreadable,
  empty, corrupt or truncated, a Chrome trace, or another message type, naming
  the type it looks like and the option it belongs to); a wrong combination of
  inputs is a
  :class:`~tfprof_lite.errors.UsageError` (exit 2).
* Loading shows a :class:`~tfprof_lite.cli.progress.Spinner` on a terminal's stderr.
* :func:`require_step` is the shared check that a step asked for with ``-step N`` /
  ``--step N`` is in the loaded profile; its error names the input and the steps
  the profile has.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tfprof_lite.base.shown import shown
from tfprof_lite.cli.common import ProfileArgument
from tfprof_lite.cli.files import TEXT_SUFFIXES, blank, is_text_path, parse_file, read_file
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.cli.xspace_inputs import (
    is_xspace,
    load_programs,
    load_records,
    load_xspace,
    refuse_chrome_traces,
)
from tfprof_lite.errors import InvalidInputError, SameTaskError, UsageError
from tfprof_lite.formats.resolve import nothing_here, saved_profiles

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel
    from tfprof_lite.model.xla_programs import XlaPrograms
    from tfprof_lite.model.xla_records import ProgramRecord
    from tfprof_lite.profiler import Profiler

# The facade, the protobuf messages and the cluster model are imported where they
# are used: loading an XSpace needs none of them, and a command's start-up time is
# mostly imports (tests/unit/test_lazy_imports.py keeps it so).

__all__ = [
    "TEXT_SUFFIXES",
    "MERGE_HELP",
    "InputSpec",
    "input_options",
    "load_profiler",
    "load_program_records",
    "load_xla_programs",
    "parse_file",
    "read_file",
    "require_step",
    "resolve_profile_path",
    "same_task_error",
    "source_name",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_BY_NAME_KEY = "tfprof_lite.by_name"
_MERGE_KEY = "tfprof_lite.merge_same_task"
_RUN_KEY = "tfprof_lite.xspace_run"
_HOST_KEY = "tfprof_lite.xspace_host"


@dataclass(frozen=True)
class InputSpec:
    """What the user named as input (exactly one of ``profile`` or the raw files)."""

    profile: str | None = None
    graph: str | None = None
    run_meta: tuple[str, ...] = ()
    op_log: str | None = None
    #: Profiles of more tasks of a distributed run, merged with ``profile``.
    tasks: tuple[str, ...] = ()
    #: Merge the tasks' same-named nodes into one (``--by-name``).
    by_name: bool = False
    #: Merge PROFILEs even when they are of one task (``--merge``).
    merge_same_task: bool = False
    #: In a TensorBoard logdir, the profiler run to read (``--run``; default newest).
    run: str | None = None
    #: In an XSpace run with several hosts, the one to read (``--host``).
    host: str | None = None

    @classmethod
    def from_params(
        cls,
        profile: str | tuple[str, ...] | None,
        graph: str | None,
        run_meta: tuple[str, ...],
        op_log: str | None,
    ) -> InputSpec:
        """Builds a spec from click values; ``--run-meta a,b --run-meta c`` is a, b, c;
        several PROFILEs (one per task) are merged into one cluster profile."""
        metas = tuple(p for value in run_meta for p in value.split(",") if p)
        names = (profile,) if isinstance(profile, str) else tuple(profile or ())
        first = names[0] if names else None
        ctx = click.get_current_context(silent=True)
        meta = ctx.meta if ctx is not None else {}
        return cls(
            profile=first,
            graph=graph,
            run_meta=metas,
            op_log=op_log,
            tasks=names[1:],
            by_name=bool(meta.get(_BY_NAME_KEY)),
            merge_same_task=bool(meta.get(_MERGE_KEY)),
            run=meta.get(_RUN_KEY),
            host=meta.get(_HOST_KEY),
        )

    @property
    def raw(self) -> bool:
        """Whether raw protos (GraphDef/RunMetadata/op log) were given."""
        return bool(self.graph or self.run_meta or self.op_log)

    def check(self) -> None:
        """Raises :class:`UsageError` unless exactly one kind of input was given."""
        if self.profile and self.raw:
            raise UsageError("give either PROFILE or --graph/--run-meta/--op-log, not both")
        if not self.profile and not (self.graph or self.run_meta):
            raise UsageError(
                "missing PROFILE (a profile_<step> file or a directory of them, an "
                "XSpace *.xplane.pb, a run folder or a TensorBoard logdir) "
                "or --graph GRAPHDEF --run-meta RM1,RM2"
            )


def _remember_by_name(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    ctx.meta[_BY_NAME_KEY] = value
    return value


def _remember_merge(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    ctx.meta[_MERGE_KEY] = value
    return value


#: The help of ``--merge`` (here and on ``tfprof-lite cluster``).
MERGE_HELP = (
    "With several PROFILEs of one task (two runs of one program): merge them "
    "anyway. Without it they are refused; compare runs with 'tfprof-lite diff A B'."
)


def same_task_error(err: SameTaskError) -> UsageError:
    """The command line's words for ``err``: the ``diff`` to run, or ``--merge``."""
    from tfprof_lite.model.cluster_merge import describe_task

    first, second = err.sources
    return UsageError(
        f"{first} and {second} are both profiles of {describe_task(err.task)}: "
        "profiles of one task "
        f"are not a cluster; compare two runs with 'tfprof-lite diff {first} {second}', "
        "or pass --merge to merge them anyway"
    )


def _remember(key: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        ctx.meta[key] = value
        return value

    return callback


def input_options(func: _F) -> _F:
    """Adds ``[PROFILE]...``, ``--graph``, ``--run-meta``, ``--op-log``, ``--by-name``
    and ``--merge`` (kept in ``ctx.meta`` for :meth:`InputSpec.from_params`) to a command."""
    decorators = (
        click.argument("profile", nargs=-1, metavar="[PROFILE]...", cls=ProfileArgument),
        click.option(
            "--graph",
            "--graph-path",
            "graph",
            metavar="GRAPHDEF",
            help="GraphDef file (binary, or text format as .pbtxt), instead of PROFILE.",
        ),
        click.option(
            "--run-meta",
            "--run-meta-path",
            "run_meta",
            multiple=True,
            metavar="RM1,RM2",
            help="RunMetadata files, comma-separated or repeated; file i is step i.",
        ),
        click.option(
            "--op-log",
            "--op-log-path",
            "op_log",
            metavar="OPLOG",
            help="OpLogProto file (op types, FLOPs, code traces) for --graph.",
        ),
        click.option(
            "--by-name",
            is_flag=True,
            expose_value=False,
            callback=_remember_by_name,
            help="With several PROFILEs: add same-named nodes of every task up.",
        ),
        click.option(
            "--merge",
            is_flag=True,
            expose_value=False,
            callback=_remember_merge,
            help=MERGE_HELP,
        ),
        click.option(
            "--run",
            metavar="NAME",
            expose_value=False,
            callback=_remember(_RUN_KEY),
            help="With a TensorBoard logdir: the profiler run to read (default: the "
            "newest; the others are named on stderr).",
        ),
        click.option(
            "--host",
            metavar="HOST",
            expose_value=False,
            callback=_remember(_HOST_KEY),
            help="With an XSpace run of several hosts: the host to read (default: all, merged).",
        ),
    )
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def resolve_profile_path(path: str, step: int = -1) -> str:
    """``path`` itself, or for a directory its newest ``profile_<step>`` (or ``step``'s).

    Raises:
        InvalidInputError: the directory has no such file (naming the steps it has).
    """
    if not os.path.isdir(path):
        return path
    found = saved_profiles(path)
    if not found:
        raise nothing_here(path)
    if step < 0:
        return found[max(found)]
    if step not in found:
        have = ", ".join(str(s) for s in sorted(found))
        raise InvalidInputError(
            f"{shown(path)}: no profile_{step} here (profiles for steps: {have})"
        )
    return found[step]


def _load_saved(path: str) -> Profiler:
    from tfprof_lite.profiler import Profiler
    from tfprof_lite.proto import messages as pb

    data: bytes | bytearray = read_file(path, "a saved profile")
    if is_text_path(path) or blank(data):
        data = parse_file(pb.ProfileProto, path, data).SerializeToString()
    try:
        return Profiler.load(data)
    except InvalidInputError:
        parse_file(pb.ProfileProto, path, data)  # raises the error that names the file
        raise
    except (KeyError, IndexError, ValueError, TypeError) as err:
        raise InvalidInputError(
            f"{path}: inconsistent profile ({type(err).__name__}: {err})"
        ) from err


def _load_raw(spec: InputSpec, spinner: Spinner) -> Profiler:
    from tfprof_lite.profiler import Profiler
    from tfprof_lite.proto import messages as pb

    graph = parse_file(pb.GraphDef, spec.graph) if spec.graph else None
    op_log = parse_file(pb.OpLogProto, spec.op_log) if spec.op_log else None
    prof = Profiler(graph, op_log=op_log)
    for step, path in enumerate(spec.run_meta):
        spinner.update(f"reading {os.path.basename(path)} ({step + 1}/{len(spec.run_meta)})")
        prof.add_step(step, parse_file(pb.RunMetadata, path))
    return prof


def capture_dir(path: str) -> str | None:
    """The format of PROFILE ``path`` when it is a directory of RunMetadata
    captures (``captures``: task-tagged; ``run-metadata-files``:
    ``run_meta_<step>`` files of one run), read as :func:`tfprof_lite.cluster.merge`
    reads it (the input table, :mod:`tfprof_lite.formats.resolve`, says so); else None."""
    from tfprof_lite.formats import resolve

    if not os.path.isdir(path):
        return None
    try:
        name = resolve.identify(path).name
    except InvalidInputError:
        return None
    return name if name in ("captures", "run-metadata-files") else None


def load_profiler(spec: InputSpec, step: int = -1) -> Profiler:
    """Loads the profile ``spec`` names (see the module docstring).

    Args:
        spec: the inputs given on the command line.
        step: the ``-step`` option; picks ``profile_<step>`` in a directory.

    Raises:
        UsageError: no input, both a PROFILE and raw files, or PROFILEs of one
            task without ``--merge``.
        InvalidInputError: a file that cannot be used (one line naming it).
    """
    spec.check()
    refuse_chrome_traces(name for name in (spec.profile, *spec.tasks) if name)
    captures = capture_dir(spec.profile) if spec.profile and not spec.tasks else None
    if spec.profile and (spec.tasks or captures):
        from tfprof_lite.cluster import merge

        # one run's run_meta_<step> files are one task: its node names stay as they are
        one_task = captures == "run-metadata-files"
        with Spinner("merging the profiles of every task"):
            try:
                return merge(
                    (spec.profile, *spec.tasks),
                    by_name=spec.by_name or one_task,
                    allow_same_task=spec.merge_same_task,
                )
            except SameTaskError as err:
                raise same_task_error(err) from err
    if spec.profile and is_xspace(spec.profile):
        with Spinner(f"loading {shown(spec.profile)}"):
            return load_xspace(spec.profile, spec.run, spec.host, spec.by_name)
    if spec.profile:
        path = resolve_profile_path(spec.profile, step)
        with Spinner(f"loading {shown(path)}"):
            return _load_saved(path)
    with Spinner("loading run metadata") as spinner:
        return _load_raw(spec, spinner)


def load_xla_programs(spec: InputSpec) -> tuple[XlaPrograms | None, int]:
    """The compiled XLA programs of the profile ``spec`` names and its step count:
    an XSpace's read alone (no model is built), else those of the loaded profile
    (a saved TF1 profile has none)."""
    spec.check()
    refuse_chrome_traces(name for name in (spec.profile, *spec.tasks) if name)
    if spec.profile and not spec.tasks and is_xspace(spec.profile):
        with Spinner(f"loading {shown(spec.profile)}"):
            return load_programs(spec.profile, spec.run, spec.host)
    from tfprof_lite.model.xla_programs import programs_of

    model = load_profiler(spec).model
    return programs_of(model), len(model.steps)


def load_program_records(spec: InputSpec) -> list[ProgramRecord]:
    """The compiled XLA programs (HLO only) of the profile ``spec`` names: an
    XSpace's read without its events, else those of the loaded profile."""
    spec.check()
    refuse_chrome_traces(name for name in (spec.profile, *spec.tasks) if name)
    if spec.profile and not spec.tasks and is_xspace(spec.profile):
        return load_records(spec.profile, spec.run, spec.host)
    programs, _ = load_xla_programs(spec)
    return list(programs.programs) if programs is not None else []


def source_name(spec: InputSpec) -> str:
    """What error messages call the input: PROFILE, else the GraphDef, else the run metadata."""
    return spec.profile or spec.graph or (spec.run_meta[0] if spec.run_meta else "run metadata")


def require_step(model: ProfileModel, step: int, source: str) -> None:
    """Raises :class:`InvalidInputError` unless ``step`` is negative or traced in ``model``.

    Args:
        model: the loaded profile.
        step: the step asked for (negative: none in particular).
        source: the input's name, which starts the error message.
    """
    if step >= 0 and step not in model.steps:
        have = ", ".join(str(s) for s in model.sorted_steps()) or "none"
        raise InvalidInputError(f"{source}: no step {step} in this profile (steps: {have})")
