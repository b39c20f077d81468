"""``tfprof-lite shell [PROFILE]``: tfprof's interactive shell (``tfprof> ``).

Contract (TF's ``profiler`` shell, ``tensorflow/core/profiler/profiler.cc``):

* A line is a command then ``-option value`` pairs, parsed by
  :func:`~tfprof_lite.options.cli_syntax.parse_command_line` (space-split, TF's
  validation). ``scope``/``graph``/``op``/``code`` run a view with the current
  defaults overlaid by the line's options for that run only; ``set -opt v ...``
  makes them the new defaults; ``advise`` runs every advisor checker (as
  ``tfprof-lite advise`` does by default); ``help [command]``
  prints help; an empty line prints the current Options block; ``quit``, ``exit``
  and end of input (Ctrl-D) leave with status 0. Ctrl-C abandons the current line
  or query and returns to the prompt.
* Errors print the line the command line prints for the same mistake
  (:func:`~tfprof_lite.cli.common.error_line`, ``tfprof-lite: error: ...`` on
  stderr): ``No such command 'x'.``, ``no such option: -foo``, ``Got unexpected
  extra argument (x)``, tfprof's ``Invalid option '-order_by' value: 'fast'`` (an
  unknown ``-order_by``, ``-select`` or number is refused, as TF's tfprof shell
  refuses it), an invalid regex or output, a file that cannot be written. The
  shell goes on after an error; when its input is not a terminal (a script), it
  exits at the end with the exit code of the last line that failed (2 for a
  usage or option error, 1 for anything else, as the command line), else 0.
* Initial defaults are TF's ``profiler`` ones (``-max_depth 10 -select micros``)
  overlaid by the options given after ``shell``.
* On a terminal: readline editing, history in ``~/.tfprof_lite_history`` (the
  ``TFPROF_LITE_HISTORY`` environment variable names another file; empty disables
  it), and tab completion of commands, ``-options`` and the values of
  ``-order_by``, ``-select``, ``-output`` and ``-account_displayed_op_only``.
* ``code`` takes the command line's ``--user-code/--all-frames``,
  ``--user-include REGEX`` and ``--user-exclude REGEX``
  (:mod:`tfprof_lite.cli.frames`) for that command, with the same defaults.
  With input from a pipe no prompt is printed, so a script of commands gives
  just the reports.
"""

from __future__ import annotations

import cmd
import contextlib
import dataclasses
import os
import sys
from typing import Any, TextIO

import click

from tfprof_lite.cli.common import (
    TfprofCommand,
    error_line,
    query_options,
    split_tfprof_args,
    use_color,
)
from tfprof_lite.cli.frames import take_frame_flags, user_code_from
from tfprof_lite.cli.inputs import InputSpec, input_options, load_profiler, source_name
from tfprof_lite.cli.views import VIEW_NAMES, show_view
from tfprof_lite.errors import InvalidOptionError, TfprofLiteError, UsageError
from tfprof_lite.options.cli_syntax import COMMANDS, parse_command_line
from tfprof_lite.options.options import OPTION_NAMES, ORDER_BY_NAMES, SELECT_NAMES, Options
from tfprof_lite.options.output import OUTPUT_TYPES
from tfprof_lite.profiler import Profiler

__all__ = ["HISTORY_ENV", "PROMPT", "SHELL_COMMANDS", "TfprofShell", "history_path"]

PROMPT = "tfprof> "
#: Environment variable naming the history file (empty: no history).
HISTORY_ENV = "TFPROF_LITE_HISTORY"
_QUIT = ("quit", "exit")
_WORDS = (*VIEW_NAMES, "advise", "set", "help", *_QUIT)
_OPTION_HELP = {f.name: str(f.metadata.get("help", "")) for f in dataclasses.fields(Options)}
_VALUES: dict[str, tuple[str, ...]] = {
    "order_by": ORDER_BY_NAMES,
    "select": SELECT_NAMES,
    "output": tuple(t if t in ("stdout", "none") else f"{t}:outfile=F" for t in OUTPUT_TYPES),
}
_COMMAND_HELP = {
    "scope": "Name-scope view: nodes organized by their name scopes.",
    "graph": "Graph view: nodes organized by their inputs.",
    "op": "Op-type view: graph nodes aggregated by op type.",
    "code": "Python code view: nodes organized by the Python call stack.",
    "advise": "Run every advisor checker and print their advice (as tfprof-lite advise).",
    "set": "Make the given options the defaults of later commands.",
    "help": "Print this help, or one command's (help scope).",
    "quit": "Leave the shell (also exit, Ctrl-D).",
    "exit": "Leave the shell (also quit, Ctrl-D).",
}


def history_path() -> str | None:
    """The history file: ``$TFPROF_LITE_HISTORY`` if set (empty: none), else
    ``~/.tfprof_lite_history``."""
    env = os.environ.get(HISTORY_ENV)
    if env is not None:
        return env or None
    return os.path.join(os.path.expanduser("~"), ".tfprof_lite_history")


def _value_choices(option: str, text: str) -> list[str]:
    """Completions for the value of ``-option`` given the typed ``text``."""
    if option == "order_by":
        return [v + " " for v in ORDER_BY_NAMES if v.startswith(text)]
    if option == "account_displayed_op_only":
        return [v + " " for v in ("true", "false") if v.startswith(text)]
    if option == "output":
        kinds = [t if t in ("stdout", "none") else f"{t}:outfile=" for t in OUTPUT_TYPES]
        return [k for k in kinds if k.startswith(text)]
    if option == "select":
        head, _, item = text.rpartition(",")
        prefix = head + "," if head else ""
        chosen = set(head.split(",")) if head else set()
        return [prefix + v for v in SELECT_NAMES if v.startswith(item) and v not in chosen]
    return []


def complete_line(text: str, before: str) -> list[str]:
    """Completions for the word ``text`` of a shell line whose earlier part is ``before``.

    Args:
        text: the word being completed (may be empty).
        before: the line up to that word.

    Returns:
        Commands for the first word (and after ``help``), ``-option`` names for a
        word starting with ``-``, the known values after ``-order_by``, ``-select``,
        ``-output`` and ``-account_displayed_op_only``.
    """
    words = before.split()
    if not words or words == ["help"]:
        return [w + " " for w in _WORDS if w.startswith(text)]
    if words[0] not in (*VIEW_NAMES, "set", "advise"):
        return []
    previous = words[-1]
    if previous.startswith("-") and previous[1:] in OPTION_NAMES and not text.startswith("-"):
        return _value_choices(previous[1:], text)
    if text.startswith("-") or not text:
        return [f"-{n} " for n in OPTION_NAMES if f"-{n}".startswith(text)]
    return []


class TfprofShell(cmd.Cmd):
    """The interactive shell on one loaded profile.

    Args:
        profiler: the loaded profile.
        defaults: the initial default options.
        stdin, stdout: the streams (``sys.stdin``/``sys.stdout`` when None).
        interactive: prompt, readline, history and completion (default: stdin is a
            terminal).
        source: the profile's name in error messages (as the command line names it).
    """

    identchars = cmd.Cmd.identchars + "-"

    def __init__(
        self,
        profiler: Profiler,
        defaults: Options,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        interactive: bool | None = None,
        source: str = "profile",
    ) -> None:
        stdin = stdin if stdin is not None else sys.stdin
        if interactive is None:
            interactive = bool(getattr(stdin, "isatty", lambda: False)())
        super().__init__(completekey="tab" if interactive else "", stdin=stdin, stdout=stdout)
        self.use_rawinput = interactive
        self.interactive = interactive
        self.prompt = PROMPT if interactive else ""
        self.profiler = profiler
        self.defaults = defaults
        self.source = source
        self.exit_code = 0
        self._readline: Any = None

    # ------------------------------------------------------------------ loop
    def run(self) -> None:
        """Reads and runs lines until quit/exit/EOF; Ctrl-C returns to the prompt."""
        self._start_readline()
        try:
            while True:
                try:
                    self.cmdloop()
                    return
                except KeyboardInterrupt:
                    self.stdout.write("^C\n")
                    self.intro = None
        finally:
            self._save_history()

    def _start_readline(self) -> None:
        if not self.interactive:
            return
        try:
            import readline
        except ImportError:  # pragma: no cover - platforms without readline
            return
        self._readline = readline
        readline.set_completer_delims(" \t\n")
        readline.set_history_length(1000)
        path = history_path()
        if path and os.path.exists(path):
            with contextlib.suppress(OSError):
                readline.read_history_file(path)

    def _save_history(self) -> None:
        path = history_path()
        if self._readline is None or not path:
            return
        try:
            self._readline.write_history_file(path)
        except OSError as err:
            self._error(f"cannot write the history file {path}: {err.strerror}")

    # ------------------------------------------------------------------ commands
    def onecmd(self, line: str) -> bool:
        """Runs one line; returns True to leave the shell."""
        text = line.strip()
        if text == "EOF":
            if self.interactive:
                self.stdout.write("\n")
            return True
        if not text:
            self.emptyline()
            return False
        first = text.split()[0]
        if first in _QUIT:
            return True
        try:
            self._dispatch(first, line)
        except TfprofLiteError as err:
            code = UsageError.exit_code if isinstance(err, InvalidOptionError) else err.exit_code
            self._fail(str(err), code)
        return False

    def _dispatch(self, first: str, line: str) -> None:
        if first == "help":
            self._help(line.split()[1:])
            return
        words, frames = take_frame_flags(line.split())
        _check_words(words)
        command, overrides = parse_command_line(" ".join(words))
        if command == "set":
            self.defaults = self.defaults.updated(overrides)
            return
        opts = self.defaults.updated(overrides)
        if command == "advise":
            from tfprof_lite.cli.advise import advise  # the advisor loads on first use

            advise(self.profiler.model)
            return
        opts.validate_strict()
        if command == "code":
            flame = opts.output.type == "collapsed"
            opts = dataclasses.replace(opts, user_code=user_code_from(*frames, default=flame))
        show_view(self.profiler, command, opts, self.source)

    def emptyline(self) -> bool:
        """An empty line prints the current default options (tfprof's Options block)."""
        self.stdout.write(self.defaults.block_text())
        self.stdout.flush()
        return False

    def _error(self, message: str) -> None:
        """Prints an error line as the command line would (no exit code)."""
        self.stdout.flush()
        sys.stderr.write(error_line(message, use_color(sys.stderr)) + "\n")
        sys.stderr.flush()

    def _fail(self, message: str, code: int) -> None:
        """Prints a failed line's error and keeps its exit code."""
        self._error(message)
        self.exit_code = code

    def _help(self, topics: list[str]) -> None:
        self.stdout.write(help_text(topics[0] if topics else None))
        self.stdout.flush()

    # ------------------------------------------------------------------ completion
    def completenames(self, text: str, *ignored: Any) -> list[str]:
        """Completes the first word: the shell's commands."""
        return complete_line(text, "")

    def completedefault(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        """Completes options and option values after the command."""
        return complete_line(text, line[:begidx])

    def complete_help(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        """Completes ``help``'s topic: a command name."""
        return complete_line(text, line[:begidx])


def _check_words(pieces: list[str]) -> None:
    """Refuses an unknown command, an unknown option or a stray word with the
    command line's words for them.

    Raises:
        UsageError: what ``tfprof-lite`` would say for the same words.
    """
    if pieces[0] not in COMMANDS:
        raise UsageError(f"No such command '{pieces[0]}'. (see 'help')")
    _, rest = split_tfprof_args(pieces[1:])
    for piece in rest:
        if piece.startswith("--"):
            raise UsageError(f"No such option '{piece.split('=', 1)[0]}'.")
        raise UsageError(f"Got unexpected extra argument ({piece})")


def help_text(topic: str | None = None) -> str:
    """The shell's help: every command and option, or one command's line."""
    if topic is not None:
        if topic not in _COMMAND_HELP:
            return f"No help for '{topic}'. Commands: {', '.join(_WORDS)}\n"
        return f"{topic}: {_COMMAND_HELP[topic]}\n"
    lines = ["Commands:"]
    lines += [f"  {name:<8}{text}" for name, text in _COMMAND_HELP.items()]
    lines += ["", "Options (command -option value ...; set makes them the defaults):"]
    for name in OPTION_NAMES:
        lines.append(f"  -{name:<27}{_OPTION_HELP.get(name, '')}")
        if name in _VALUES:
            lines.append(f"  {'':<28}one of: {', '.join(_VALUES[name])}")
    lines += [
        "",
        "Example: scope -max_depth 4 -select micros,bytes -order_by micros",
        "An empty line prints the current options.",
    ]
    return "\n".join(lines) + "\n"


def _intro(prof: Profiler, label: str) -> str:
    model = prof.model
    steps = ", ".join(str(s) for s in model.sorted_steps()) or "none"
    return (
        f"tfprof-lite shell on {label}: {len(model)} graph nodes, steps {steps}.\n"
        "Type 'help' for commands and options, 'quit' or Ctrl-D to leave."
    )


@click.command(
    "shell",
    cls=TfprofCommand,
    short_help="Interactive tfprof shell (tfprof> prompt).",
)
@input_options
@click.pass_context
def shell_command(
    ctx: click.Context,
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
) -> None:
    """Interactive shell speaking tfprof's command language.

    Commands: scope, graph, op, code, advise (with -options), set -options (new
    defaults), help, an empty line (print options), quit/exit/Ctrl-D. Options
    given after PROFILE become the initial defaults.

    \b
    Example:
      tfprof-lite shell tfprof_out/profile_4
      tfprof> scope -max_depth 4 -select micros,bytes -order_by micros
      tfprof> set -account_type_regexes MatMul,Relu
      tfprof> op
    """
    defaults = query_options(ctx)
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    prof = load_profiler(spec, defaults.step)
    shell = TfprofShell(prof, defaults, source=source_name(spec))
    if shell.interactive:
        shell.intro = _intro(prof, spec.profile or graph or "run metadata")
    shell.run()
    if shell.exit_code and not shell.interactive:
        ctx.exit(shell.exit_code)


SHELL_COMMANDS: dict[str, click.Command] = {"shell": shell_command}
