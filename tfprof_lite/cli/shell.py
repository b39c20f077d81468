"""``tfprof-lite shell [PROFILE]``: tfprof's interactive shell (``tfprof> ``).

Contract (TF's ``profiler`` shell, ``tensorflow/core/profiler/profiler.cc``):

* A line is a command then ``-option value`` pairs, parsed by
  :func:`~tfprof_lite.options.cli_syntax.parse_command_line` (space-split, TF's
  validation). ``scope``/``graph``/``op``/``code`` run a view with the current
  defaults overlaid by the line's options for that run only; ``set -opt v ...``
  makes them the new defaults; ``advise`` runs the advisor; ``help [command]``
  prints help; an empty line prints the current Options block; ``quit``, ``exit``
  and end of input (Ctrl-D) leave with status 0. Ctrl-C abandons the current line
  or query and returns to the prompt.
* Errors print one line, ``E: INVALID_ARGUMENT: <tfprof's text>`` for a bad option
  (``First string must be a valid command.`` for an unknown command) or
  ``E: <text>`` for anything else, and the shell goes on.
* Initial defaults are TF's ``profiler`` ones (``-max_depth 10 -select micros``)
  overlaid by the options given after ``shell``.
* On a terminal: readline editing, history in ``~/.tfprof_lite_history`` (the
  ``TFPROF_LITE_HISTORY`` environment variable names another file; empty disables
  it), and tab completion of commands, ``-options`` and the values of
  ``-order_by``, ``-select``, ``-output`` and ``-account_displayed_op_only``.
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

from tfprof_lite.cli.advise import advise
from tfprof_lite.cli.common import TfprofCommand, query_options, style
from tfprof_lite.cli.inputs import InputSpec, input_options, load_profiler
from tfprof_lite.cli.views import VIEW_NAMES, show_view
from tfprof_lite.errors import InvalidOptionError, TfprofLiteError
from tfprof_lite.options.cli_syntax import parse_command_line
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
    "advise": "Run the advisor's checkers and print their advice.",
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
    """

    identchars = cmd.Cmd.identchars + "-"

    def __init__(
        self,
        profiler: Profiler,
        defaults: Options,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        interactive: bool | None = None,
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
        except InvalidOptionError as err:
            self._error(f"INVALID_ARGUMENT: {err}")
        except TfprofLiteError as err:
            self._error(str(err))
        return False

    def _dispatch(self, first: str, line: str) -> None:
        if first == "help":
            self._help(line.split()[1:])
            return
        command, overrides = parse_command_line(line.strip())
        if command == "set":
            self.defaults = self.defaults.updated(overrides)
            return
        opts = self.defaults.updated(overrides)
        if command == "advise":
            advise(self.profiler.model)
            return
        opts.validate_strict()
        show_view(self.profiler, command, opts)

    def emptyline(self) -> bool:
        """An empty line prints the current default options (tfprof's Options block)."""
        self.stdout.write(self.defaults.block_text())
        self.stdout.flush()
        return False

    def _error(self, message: str) -> None:
        first = message.strip().splitlines()[0] if message.strip() else "failed"
        self.stdout.write(style(f"E: {first}", sys.stdout, fg="red") + "\n")
        self.stdout.flush()

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
    shell = TfprofShell(prof, defaults)
    if shell.interactive:
        shell.intro = _intro(prof, spec.profile or graph or "run metadata")
    shell.run()


SHELL_COMMANDS: dict[str, click.Command] = {"shell": shell_command}
