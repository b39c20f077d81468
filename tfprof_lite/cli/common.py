"""Pieces every ``tfprof-lite`` command shares: option parsing, colour, output.

Contract:

* :class:`TfprofCommand` is a :class:`click.Command` that accepts tfprof's query
  options next to its own click options. Before click parses the arguments,
  :func:`split_tfprof_args` takes out every ``-name value`` / ``--name value`` /
  ``--name=value`` / ``--kebab-name value`` whose name is one of tfprof's 21 options
  (:data:`~tfprof_lite.options.options.OPTION_NAMES`) and not a long option the
  command declares itself; those pieces are kept in ``ctx.meta`` and turned into
  :class:`~tfprof_lite.options.options.Options` by :func:`query_options`; an invalid
  value is a :class:`~tfprof_lite.errors.UsageError` (exit 2), as click's own. A
  single-dash spelling of a declared long option (``-output x`` for ``--output``)
  is rewritten for click; any other single-dash word (``-foo``), and any option
  click does not know (``--foo``), is a usage error naming it, with the closest
  option in the spelling used (``--max-dpth``: ``--max-depth``; ``-max_dpth``:
  ``-max_depth``) when there is one.
* :func:`input_limit_option` is the ``--max-input-size SIZE`` option added to every
  command: it bounds every file the command reads for the rest of the command
  (:func:`tfprof_lite.base.reading.input_size_limit`).
* :func:`use_color` decides whether output to a stream is coloured: ``--color`` /
  ``--no-color`` on the group win, then ``NO_COLOR`` in the environment, then
  whether the stream is a terminal. :func:`style` applies click styles only then.
* :func:`error_line` is the one line every error prints (``tfprof-lite: error:
  ...``), for the commands and the shell alike; a file name in it that is not
  UTF-8 is written with ``\\xNN`` escapes (:func:`~tfprof_lite.base.shown.shown`).
* A command whose ``PROFILE`` argument is a :class:`ProfileArgument` says in its
  help what PROFILE may be (:data:`PROFILE_HELP`).
* :func:`write_report` prints a tfprof text report, with the banners, headings and
  legend line highlighted when colour is on; piped output is byte-identical to
  tfprof's.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import click

from tfprof_lite.base.reading import (
    DEFAULT_MAX_INPUT_SIZE,
    MAX_INPUT_SIZE_ENV,
    input_size_limit,
    max_input_size,
)
from tfprof_lite.base.shown import shown
from tfprof_lite.base.units import format_size
from tfprof_lite.errors import InvalidOptionError, UsageError
from tfprof_lite.options.names import OPTION_NAMES

if TYPE_CHECKING:
    from tfprof_lite.options.options import Options

# Option parsing (and RE2 with it) is imported by the commands that take tfprof's
# query options, when they read them: every command passes through this module.

__all__ = [
    "ERROR_PREFIX",
    "PROFILE_HELP",
    "TFPROF_OPTIONS_HELP",
    "ProfileArgument",
    "TfprofCommand",
    "cli_defaults",
    "error_line",
    "input_limit_option",
    "query_options",
    "split_tfprof_args",
    "style",
    "unknown_option",
    "use_color",
    "write_report",
]

_OPTION_RE = re.compile(r"(--?)([A-Za-z][A-Za-z0-9_-]*)(?:=(.*))?", re.DOTALL)
_ADOO = "account_displayed_op_only"
_META_KEY = "tfprof_lite.tfprof_args"

#: The epilog of every command that takes tfprof's query options.
TFPROF_OPTIONS_HELP = (
    "tfprof options (tfprof style -max_depth 4, or --max-depth 4 / --max_depth=4): "
    "-max_depth, -min_bytes, -min_peak_bytes, -min_residual_bytes, -min_output_bytes, "
    "-min_micros, -min_accelerator_micros, -min_cpu_micros, -min_params, -min_float_ops, "
    "-min_occurrence, -step, -order_by, -account_type_regexes, -start_name_regexes, "
    "-trim_name_regexes, -show_name_regexes, -hide_name_regexes, "
    "-account_displayed_op_only, -select, -output. What each does: tfprof-lite help options."
)


#: The start of every error line the CLI (and the shell) prints.
ERROR_PREFIX = "tfprof-lite: error:"


def error_line(message: str, color: bool = False) -> str:
    """The one line (no newline) an error prints: :data:`ERROR_PREFIX` and the
    message with its lines joined by ``; `` (file names that are not UTF-8
    written with ``\\xNN``, :func:`~tfprof_lite.base.shown.shown`)."""
    line = "; ".join(part.strip() for part in shown(message).strip().splitlines()) or "failed"
    prefix = click.style(ERROR_PREFIX, fg="red", bold=True) if color else ERROR_PREFIX
    return f"{prefix} {line}"


def cli_defaults() -> Options:
    """The defaults of TF's ``profiler`` command line (``-max_depth 10 -select micros``)."""
    from tfprof_lite.options.builder import ProfileOptionBuilder
    from tfprof_lite.options.options import Options

    return Options.from_dict(ProfileOptionBuilder().with_max_depth(10).build())


def _declared(command: click.Command) -> tuple[dict[str, str], frozenset[str]]:
    """The command's long options by normalized name (``op_log`` -> ``--op-log``) and
    its one-letter option letters (``o``)."""
    longs: dict[str, str] = {"help": "--help"}
    shorts: set[str] = set()
    for param in command.params:
        for opt in (*param.opts, *param.secondary_opts):
            if opt.startswith("--"):
                longs.setdefault(opt[2:].replace("-", "_"), opt)
            elif opt.startswith("-") and len(opt) == 2:
                shorts.add(opt[1])
    return longs, frozenset(shorts)


def unknown_option(piece: str, longs: Mapping[str, str]) -> UsageError:
    """The usage error for the unknown option ``piece``, with the closest option.

    Names are compared without dashes, ``-``/``_`` and case (``--max-dpth`` and
    ``-max_dpth`` are both ``max_dpth``, closest to ``max_depth``); the match is
    shown in the spelling the user wrote: ``--max-depth`` for a ``--`` word,
    tfprof's ``-max_depth`` for a ``-`` word, a command's own options as declared.
    """
    import difflib

    name = piece.split("=", 1)[0]
    double = name.startswith("--")
    spelled = {n: f"--{n.replace('_', '-')}" if double else f"-{n}" for n in OPTION_NAMES}
    spelled.update(longs)
    key = name.lstrip("-").replace("-", "_").lower()
    close = difflib.get_close_matches(key, sorted(spelled), n=1)
    hint = f" (did you mean {spelled[close[0]]}?)" if close else ""
    return UsageError(f"no such option: {name}{hint}")


def _tfprof_piece_count(name: str, attached: str | None, following: str | None) -> int:
    """How many argv items the tfprof option ``name`` uses (1 or 2)."""
    if attached is not None or following is None:
        return 1
    if name == _ADOO:
        from tfprof_lite.options.cli_syntax import parse_bool

        return 2 if parse_bool(following) is not None else 1
    return 2


def split_tfprof_args(
    args: Sequence[str],
    own_long: Mapping[str, str] | None = None,
    own_short: frozenset[str] = frozenset(),
) -> tuple[list[str], list[str]]:
    """Separates tfprof query options from the rest of an argv list.

    Args:
        args: the command's arguments.
        own_long: the long options the command declares, by name with ``_`` for
            ``-`` (``{"op_log": "--op-log"}``); they are left for click, even when
            tfprof has an option of that name, and respelled as declared
            (``-op_log=x`` becomes ``--op-log=x``).
        own_short: the command's one-letter options (``-o``).

    Returns:
        ``(tfprof_pieces, rest)``: the tfprof options as written (ready for
        :func:`~tfprof_lite.options.cli_syntax.apply_cli_options`) and everything
        else, in order. ``--`` ends option processing.

    Raises:
        UsageError: a single-dash word that is no option, e.g. ``-foo``.
    """
    longs = dict(own_long or {})
    tfprof: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        piece = args[i]
        if piece == "--":
            rest.extend(args[i:])
            break
        match = _OPTION_RE.fullmatch(piece)
        key = match[2].replace("-", "_") if match else ""
        if match is None:
            rest.append(piece)
            i += 1
        elif key in longs:
            rest.append(longs[key] + ("" if match[3] is None else f"={match[3]}"))
            i += 1
        elif key in OPTION_NAMES:
            following = args[i + 1] if i + 1 < len(args) else None
            used = _tfprof_piece_count(key, match[3], following)
            tfprof.extend(args[i : i + used])
            i += used
        elif match[1] == "-" and len(key) > 1 and key[0] not in own_short:
            raise unknown_option(piece, longs)
        else:
            rest.append(piece)
            i += 1
    return tfprof, rest


#: What PROFILE may be: every command that reads one says it in its help.
PROFILE_HELP = (
    "PROFILE is a saved profile (profile_<step>, written by tfprof_lite or "
    "TensorFlow), a directory of them (the newest, or -step N's), an XSpace "
    "(*.xplane.pb, from TF2, Keras or JAX), a run folder "
    "(LOGDIR/plugins/profile/<run>/), or a TensorBoard logdir (Keras' "
    "TensorBoard(log_dir=...), JAX's trace dir; the newest run, or --run NAME's)."
)


class ProfileArgument(click.Argument):
    """The ``PROFILE`` argument: a :class:`TfprofCommand` that has it says in its
    help what PROFILE may be (:data:`PROFILE_HELP`)."""


class TfprofCommand(click.Command):
    """A click command that also accepts tfprof's query options (see the module doc).

    Args:
        takes_query_options: False for commands that have no use for tfprof's query
            options; giving one is then a usage error instead of being ignored.
        *args, **kwargs: as for :class:`click.Command`.
    """

    def __init__(self, *args: Any, takes_query_options: bool = True, **kwargs: Any) -> None:
        self.takes_query_options = takes_query_options
        if takes_query_options:
            kwargs.setdefault("epilog", TFPROF_OPTIONS_HELP)
        super().__init__(*args, **kwargs)

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command's help, then what PROFILE may be when it takes one."""
        super().format_help_text(ctx, formatter)
        if any(isinstance(param, ProfileArgument) for param in self.params):
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(PROFILE_HELP)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Takes the tfprof options out of ``args``, then lets click parse the rest."""
        longs, shorts = _declared(self)
        tfprof, rest = split_tfprof_args(args, longs, shorts)
        if tfprof and not self.takes_query_options:
            raise UsageError(f"'{self.name}' takes no tfprof query options (got {tfprof[0]})")
        ctx.meta[_META_KEY] = tfprof
        try:
            return super().parse_args(ctx, rest)
        except click.NoSuchOption as err:  # suggested as for a single-dash word
            raise unknown_option(err.option_name, longs) from err


def query_options(ctx: click.Context, base: Options | None = None) -> Options:
    """The tfprof options given to this command, overlaid on ``base``.

    Args:
        ctx: the command's context (after :class:`TfprofCommand` parsed it).
        base: the defaults; :func:`cli_defaults` when None.

    Returns:
        Validated options (unknown ``-order_by``/``-select`` values rejected).

    Raises:
        UsageError: an invalid value, in tfprof's words (exit code 2, as for
            values click rejects).
    """
    from tfprof_lite.options.cli_syntax import apply_cli_options

    pieces: list[str] = ctx.meta.get(_META_KEY, [])
    try:
        opts = apply_cli_options(base if base is not None else cli_defaults(), pieces)
        opts.validate_strict()
    except InvalidOptionError as err:
        raise UsageError(str(err)) from err
    return opts


def _apply_input_limit(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Sets the input limit for the rest of the command (``--max-input-size``)."""
    try:
        limit = max_input_size(value)
    except InvalidOptionError as err:
        raise click.BadParameter(str(err), ctx, param) from err
    ctx.with_resource(input_size_limit(limit))


def input_limit_option() -> click.Option:
    """The ``--max-input-size SIZE`` option every command gets (see docs/cli.md)."""
    return click.Option(
        ["--max-input-size"],
        metavar="SIZE",
        expose_value=False,
        callback=_apply_input_limit,
        help=f"Refuse input files larger than SIZE, e.g. 8GiB (default: "
        f"${MAX_INPUT_SIZE_ENV}, else {format_size(DEFAULT_MAX_INPUT_SIZE).replace(' ', '')}).",
    )


def use_color(stream: TextIO | None = None, forced: bool | None = None) -> bool:
    """Whether output to ``stream`` (default stdout) should be coloured.

    Args:
        stream: the stream written to.
        forced: ``--color``/``--no-color`` when known; else read from the current
            click context.
    """
    ctx = click.get_current_context(silent=True)
    if forced is None and ctx is not None:
        forced = ctx.find_root().color
    if forced is not None:
        return bool(forced)
    if os.environ.get("NO_COLOR"):
        return False
    target = stream if stream is not None else sys.stdout
    isatty = getattr(target, "isatty", None)
    return bool(isatty and isatty())


def style(text: str, stream: TextIO | None = None, **styles: Any) -> str:
    """``click.style(text, **styles)`` when :func:`use_color` says so, else ``text``."""
    return click.style(text, **styles) if use_color(stream) else text


_HEADINGS = frozenset({"Doc:", "Profile:"})


def _color_report(text: str) -> str:
    lines = text.split("\n")
    legend_done = False
    for i, line in enumerate(lines):
        if line.startswith("====="):
            lines[i] = click.style(line, fg="cyan")
        elif line in _HEADINGS:
            lines[i] = click.style(line, bold=True)
        elif not legend_done and line.startswith("node name |"):
            lines[i] = click.style(line, bold=True, fg="blue")
            legend_done = True
    return "\n".join(lines)


def write_report(text: str) -> None:
    """Prints a tfprof text report to stdout, highlighted when colour is on."""
    out = _color_report(text) if use_color(sys.stdout) else text
    sys.stdout.write(shown(out))
    sys.stdout.flush()
