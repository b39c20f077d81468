"""The ``tfprof-lite`` command line (also ``python -m tfprof_lite``).

Contract:

* One module per command family (:mod:`~tfprof_lite.cli.views` for
  ``scope/graph/op/code``, :mod:`~tfprof_lite.cli.shell`, :mod:`~tfprof_lite.cli.report`,
  :mod:`~tfprof_lite.cli.diff`, :mod:`~tfprof_lite.cli.advise`,
  :mod:`~tfprof_lite.cli.monitor`, :mod:`~tfprof_lite.cli.xla_compat`,
  :mod:`~tfprof_lite.cli.overview`, :mod:`~tfprof_lite.cli.memory`,
  :mod:`~tfprof_lite.cli.timeline`, :mod:`~tfprof_lite.cli.pprof`,
  :mod:`~tfprof_lite.cli.hlo`, :mod:`~tfprof_lite.cli.op_profile` for
  ``op-profile``/``roofline``, :mod:`~tfprof_lite.cli.memory_viewer`,
  :mod:`~tfprof_lite.cli.help`); each exports its
  click commands. ``_REGISTRY``
  names each command's module and one-line help: ``--help`` lists the commands
  without importing them, and a command's module is imported only when it runs
  (:data:`COMMANDS`, name -> command, imports on lookup).
* :func:`main` is the only place errors are turned into output: any
  :class:`~tfprof_lite.errors.TfprofLiteError`, click usage error or ``OSError``
  becomes exactly one line ``tfprof-lite: error: <file>: <problem>`` on stderr and
  the exit code 1 (bad input: a file that is missing, unreadable, not a regular
  file, too large, empty, corrupt, or lacks what an option names) or 2 (usage: an
  unknown option, a malformed option value in either syntax, a missing argument,
  conflicting inputs); success is 0. The one exception is a bare ``tfprof-lite``
  (no arguments): the full help (usage and command list) on stderr and exit 2,
  as click does for a group called without a command. A closed stdout pipe (``| head``) ends quietly
  with 0. SIGTERM becomes :class:`Terminated` so cleanup runs (temporary files are
  removed), then one line and exit 143; Ctrl-C (SIGINT) ends with one line and
  exit 130, the shell's convention. No traceback is printed for any of these.
* Every command takes ``--max-input-size SIZE``
  (:func:`~tfprof_lite.cli.common.input_limit_option`).
* Colour: ``--color``/``--no-color`` force it; otherwise output is coloured only on
  a terminal and when ``NO_COLOR`` is unset (see :func:`~tfprof_lite.cli.common.use_color`).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import signal
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

from tfprof_lite.errors import TfprofLiteError

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

__all__ = ["COMMANDS", "INTERRUPTED_EXIT", "TERMINATED_EXIT", "Terminated", "cli", "main"]

#: The exit code after SIGTERM (128 + 15, as a shell reports a SIGTERM death).
TERMINATED_EXIT = 128 + signal.SIGTERM
#: The exit code after Ctrl-C (128 + 2, as a shell reports a SIGINT death).
INTERRUPTED_EXIT = 128 + signal.SIGINT


#: Every command in the order of :data:`COMMANDS`: name -> (module, the module's
#: ``*_COMMANDS`` dict, one-line help). The help text is what ``--help`` lists, so
#: listing the commands imports none of them; ``tests/unit/test_lazy_imports.py``
#: checks it against each command's own short help.
_REGISTRY: dict[str, tuple[str, str, str]] = {
    "scope": ("views", "VIEW_COMMANDS", "Name-scope view."),
    "graph": ("views", "VIEW_COMMANDS", "Graph view."),
    "op": ("views", "VIEW_COMMANDS", "Op-type view."),
    "code": ("views", "VIEW_COMMANDS", "Python code view."),
    "advise": ("advise", "ADVISE_COMMANDS", "Advice: expensive ops, accelerator use, op choices."),
    "shell": ("shell", "SHELL_COMMANDS", "Interactive tfprof shell (tfprof> prompt)."),
    "report": ("report", "REPORT_COMMANDS", "Self-contained HTML report."),
    "diff": ("diff", "DIFF_COMMANDS", "Compare two profiles or two steps."),
    "monitor": ("monitor", "MONITOR_COMMANDS", "Live or finished monitoring lines of a run."),
    "xla-compat": ("xla_compat", "XLA_COMPAT_COMMANDS", "Ops XLA cannot JIT-compile, per scope."),
    "overview": (
        "overview",
        "OVERVIEW_COMMANDS",
        "Step time, idle time, top ops, environment, advice.",
    ),
    "memory": (
        "memory",
        "MEMORY_COMMANDS",
        "Peak memory per allocator and what is live at the peak.",
    ),
    "kernels": (
        "memory",
        "MEMORY_COMMANDS",
        "GPU kernel statistics per kernel, launch config and op.",
    ),
    "timeline": ("timeline", "TIMELINE_COMMANDS", "Chrome trace of the profile's steps."),
    "xspace": (
        "xspace",
        "XSPACE_COMMANDS",
        "Write the profile as an XSpace for XProf / TensorBoard.",
    ),
    "pprof": ("pprof", "PPROF_COMMANDS", "pprof profile of the code/scope/op view."),
    "hlo": ("hlo", "HLO_COMMANDS", "List XLA HLO dumps; draw one module with Graphviz."),
    "op-profile": (
        "op_profile",
        "PROGRAM_COMMANDS",
        "XLA op time, FLOPs, bytes, roofline bound and headroom.",
    ),
    "roofline": (
        "op_profile",
        "PROGRAM_COMMANDS",
        "Roofline chart of the XLA programs and their top ops.",
    ),
    "op-stats": (
        "op_stats",
        "OP_STATS_COMMANDS",
        "Op count, time and self time per type and op, whole window.",
    ),
    "memory-viewer": (
        "memory_viewer",
        "MEMORY_VIEWER_COMMANDS",
        "XLA program memory: total, peak, buffers at the peak.",
    ),
    "help": ("help", "HELP_COMMANDS", "Print a documentation page (help options, help scope)."),
    "cluster": (
        "cluster",
        "CLUSTER_COMMANDS",
        "Per-task time, stragglers, ps load of a cluster.",
    ),
}


#: Commands whose modules do not import NumPy (their --help stays without it).
_WITHOUT_NUMPY = frozenset({"help", "xspace", "memory-viewer"})
#: The variables that set the thread count of NumPy's BLAS (OpenBLAS, OpenMP).
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def _numpy_with_one_blas_thread() -> None:
    """Imports NumPy with ``OPENBLAS_NUM_THREADS=1``, then restores the environment.

    No command does linear algebra, but OpenBLAS starts one thread per core when
    NumPy is imported, and those spin for a while (about 65 ms of CPU on two
    cores, taken from the command on a busy machine). Left alone when NumPy is
    already imported or the user set either variable; the processes a command
    starts see the environment as it was.
    """
    if "numpy" in sys.modules or any(name in os.environ for name in _BLAS_THREADS):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


def _load_command(name: str) -> click.Command:
    """Imports command ``name``'s module and returns the command (``--max-input-size`` added)."""
    from tfprof_lite.cli.common import input_limit_option

    if name not in _WITHOUT_NUMPY:
        _numpy_with_one_blas_thread()
    module, attribute, _ = _REGISTRY[name]
    family: dict[str, click.Command] = getattr(
        importlib.import_module(f"tfprof_lite.cli.{module}"), attribute
    )
    command = family[name]
    command.params.append(input_limit_option())
    return command


class _LazyGroup(click.Group):
    """A click group whose commands are imported when first looked up.

    ``--help`` lists the registry's one-line help texts without importing any
    command module; running (or asking for the help of) a command imports only its
    own module.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(_REGISTRY) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _REGISTRY:
            self.add_command(_load_command(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            loaded = self.commands.get(name)
            if loaded is not None and loaded.hidden:
                continue
            limit = formatter.width - 6 - max(len(n) for n in self.list_commands(ctx))
            text = loaded.get_short_help_str(limit) if loaded is not None else _REGISTRY[name][2]
            rows.append((name, text))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class _Commands(Mapping[str, click.Command]):
    """:data:`COMMANDS`: a read-only name -> command mapping that imports on access."""

    def __getitem__(self, name: str) -> click.Command:
        command = cli.get_command(click.Context(cli), name) if name in _REGISTRY else None
        if command is None:
            raise KeyError(name)
        return command

    def __iter__(self) -> Iterator[str]:
        return iter(_REGISTRY)

    def __len__(self) -> int:
        return len(_REGISTRY)

    def __contains__(self, name: object) -> bool:
        return name in _REGISTRY


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["--help", "-h"]})
@click.option(
    "--color/--no-color",
    default=None,
    help="Force coloured output on or off (default: colour on a terminal only).",
)
@click.version_option(package_name="tfprof-lite")
@click.pass_context
def cli(ctx: click.Context, color: bool | None) -> None:
    """Analyse tfprof profiles without TensorFlow.

    PROFILE is a saved profile (a profile_<step> file, written by tfprof_lite or
    TensorFlow), a directory of them (the newest is used, or -step N's), an
    XSpace (*.xplane.pb, written by TF2, Keras or JAX), a run folder
    (LOGDIR/plugins/profile/<run>/), or a TensorBoard logdir (what Keras'
    TensorBoard(log_dir=...) or jax.profiler.start_trace(dir) wrote to: the
    newest run is read, or --run NAME's). Instead of PROFILE, --graph GRAPHDEF
    --run-meta RM1,RM2 [--op-log OPLOG] builds the profile from raw protos
    (binary, or text format as .pbtxt). Exit codes: 0 ok, 1 bad input,
    2 usage error. The documentation is installed with the package:
    'tfprof-lite help' lists its pages, 'tfprof-lite help options' explains
    every tfprof option.

    \b
    Examples (on the tfprof_out/ that examples/quickstart.py writes):
      tfprof-lite scope tfprof_out/profile_4 -max_depth 3 -select micros,bytes
      tfprof-lite op tfprof_out --order-by micros
      tfprof-lite shell tfprof_out/profile_4
      tfprof-lite report tfprof_out/profile_4 -o report.html
      tfprof-lite diff tfprof_out/profile_2 tfprof_out/profile_4
      tfprof-lite overview tfprof_out/profile_4
      tfprof-lite timeline tfprof_out/profile_4 -o steps.json.gz
      tfprof-lite pprof tfprof_out/profile_4 --view scope --select micros,bytes -o scope.pb.gz
      tfprof-lite hlo tfprof_out/xla_dump --module cluster_1 -o cluster_1.svg
      tfprof-lite overview LOGDIR        (a TensorBoard logdir: Keras, JAX)
      tfprof-lite help options
    """
    ctx.color = color


#: Every command, by name, in registry order; looking one up imports its module.
COMMANDS: Mapping[str, click.Command] = _Commands()


class Terminated(BaseException):
    """SIGTERM arrived while a command ran.

    Raised in the main thread by the handler :func:`main` installs, so that every
    ``finally`` block and cleanup handler (temporary files) runs before the exit.
    """


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextlib.contextmanager
def _sigterm_as_exception() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _color_flag(argv: list[str]) -> bool | None:
    """``--color``/``--no-color`` given before the command, if any."""
    for arg in argv:
        if arg in ("--color", "--no-color"):
            return arg == "--color"
        if not arg.startswith("-"):
            break
    return None


_INTERRUPTED = "interrupted (Ctrl-C); nothing was left half-written"


def _fail(message: str, code: int, argv: list[str]) -> int:
    from tfprof_lite.cli.common import error_line, use_color

    sys.stderr.write(error_line(message, use_color(sys.stderr, _color_flag(argv))) + "\n")
    sys.stderr.flush()
    return code


def _usage_hint(err: click.ClickException) -> str:
    ctx = getattr(err, "ctx", None)
    if isinstance(err, click.UsageError) and ctx is not None:
        return f" (see '{ctx.command_path} --help')"
    return ""


def _quiet_broken_pipe() -> int:
    """Points stdout at /dev/null so the interpreter's final flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError, ValueError):
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI and returns the process exit code (0 ok, 1 bad input, 2 usage).

    Without ``argv`` (the ``tfprof-lite`` script, ``python -m tfprof_lite``: the
    process ends when this returns) what the command built is handed to the
    garbage collector's permanent generation (``gc.freeze``) before returning,
    so that the interpreter's shutdown does not walk it in a last full
    collection (some 25 ms after ``overview`` of an XSpace); memory is given
    back at exit as ever. With ``argv`` (a caller that goes on) nothing changes.
    """
    code = _run(list(sys.argv[1:] if argv is None else argv))
    if argv is None:
        gc.freeze()
    return code


def _run(args: list[str]) -> int:
    try:
        with _sigterm_as_exception():
            code = cli.main(args=args, prog_name="tfprof-lite", standalone_mode=False)
    except Terminated:
        return _fail("terminated (SIGTERM); nothing was left half-written", TERMINATED_EXIT, args)
    except TfprofLiteError as err:
        return _fail(str(err), err.exit_code, args)
    except KeyboardInterrupt:
        return _fail(_INTERRUPTED, INTERRUPTED_EXIT, args)
    except click.exceptions.Abort as err:
        if isinstance(err.__cause__, KeyboardInterrupt):  # click's wrapping of Ctrl-C
            return _fail(_INTERRUPTED, INTERRUPTED_EXIT, args)
        return _fail("aborted", 1, args)
    except click.exceptions.NoArgsIsHelpError as err:
        # Bare `tfprof-lite`: the whole help on stderr, as click does, not one line.
        err.show()
        return err.exit_code
    except click.ClickException as err:
        return _fail(err.format_message() + _usage_hint(err), err.exit_code, args)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        return _fail(f"{where}{err.strerror or err}", 1, args)
    return code if isinstance(code, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
