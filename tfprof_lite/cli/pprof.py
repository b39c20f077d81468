"""``tfprof-lite pprof [PROFILE] -o profile.pb.gz``: a pprof profile of one view.

Contract:

* The profile comes from :mod:`tfprof_lite.cli.inputs`; the query starts from
  ``ProfileOptionBuilder``'s defaults (``-max_depth 100``, as the Python API
  writes pprof), overlaid with the tfprof filter options given
  (``-hide_name_regexes``, ``-account_type_regexes``, ``-max_depth``...);
  ``-output`` is this command's ``-o``.
* ``--view code`` (the default) with one ``--select`` writes tfprof's pprof
  (:mod:`tfprof_lite.outputs.pprof`): the payload TensorFlow writes for the same
  query, sample types ``count`` and the selected attribute. Any other view
  (``scope``, ``op``), several selects, or ``--extended`` write the extended
  format (:mod:`tfprof_lite.outputs.pprof_extended`): one sample type per
  selected attribute after ``count``, labels ``node``/``op``/``device``.
* ``--select`` takes the numeric attributes pprof can hold (a comma-separated
  list; an unknown name is a usage error, exit 2). ``--step N`` (``-step N``)
  profiles step N only (for a directory it also picks ``profile_N``); a step the
  profile lacks is an error (exit 1), as is the code view of a profile without
  code traces, or a query that leaves nothing to write.
* The code view folds library frames (TensorFlow, Keras, absl, the standard
  library, site-packages) into the user's own frames by default, so ``pprof
  -top`` lists the user's lines (:mod:`tfprof_lite.cli.frames`);
  ``--all-frames`` writes every frame, as TensorFlow's ``profile_python`` does.
* The gzip file is written atomically; one line then says where it went and
  gives a ``pprof`` command line to read it.
"""

from __future__ import annotations

import dataclasses
import sys

import click

from tfprof_lite.base.shown import shown
from tfprof_lite.base.writing import check_output_path, write_atomic
from tfprof_lite.cli.common import TfprofCommand, query_options, style
from tfprof_lite.cli.frames import frame_options, user_code_from
from tfprof_lite.cli.inputs import (
    InputSpec,
    input_options,
    load_profiler,
    require_step,
    source_name,
)
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.options.options import Options
from tfprof_lite.options.output import OutputSpec
from tfprof_lite.outputs import pprof, pprof_extended
from tfprof_lite.outputs.answer import run_query
from tfprof_lite.profiler import Profiler
from tfprof_lite.views import make_view
from tfprof_lite.views.result import ViewResult

__all__ = ["PPROF_COMMANDS", "PPROF_VIEWS", "pprof_command", "pprof_options"]

#: The views the command writes pprof for.
PPROF_VIEWS: tuple[str, ...] = ("code", "scope", "op")


def _parse_select(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    """``"micros,bytes"`` -> ("micros", "bytes"), each a pprof sample type."""
    names = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    bad = [n for n in names if n not in pprof.PPROF_SELECTS]
    if bad or not names:
        valid = ", ".join(pprof.PPROF_SELECTS)
        raise click.BadParameter(f"{value!r}: choose among {valid}", ctx, param)
    return names


def pprof_options(
    base: Options, view: str, select: tuple[str, ...], step: int, extended: bool
) -> Options:
    """``base`` with the select, step and pprof output the command writes.

    The output's ``outfile`` is a placeholder: the command writes the bytes itself.
    """
    pairs = [("outfile", "pprof.pb.gz")]
    if extended or view != "code" or len(select) > 1:
        pairs.append(("extended", "1"))
    output = OutputSpec("pprof", tuple(pairs))
    return dataclasses.replace(base, select=select, step=step, output=output)


def _query(prof: Profiler, view: str, opts: Options, source: str) -> ViewResult:
    model = prof.model
    require_step(model, opts.step, source)
    if view == "code" and not model.has_trace:
        raise InvalidInputError(
            f"{source}: no code traces in this profile (the code view needs them); "
            "use --view scope or --view op"
        )
    result = run_query(model, make_view(view, model), opts)
    shown = result.rows if view == "op" else result.root.children
    if result.empty or not shown:
        raise InvalidInputError(f"{source}: nothing to write; the {view} view shows no nodes")
    return result


def _render(result: ViewResult) -> bytes:
    if pprof_extended.is_extended(result):
        return pprof_extended.render_extended(result)
    return pprof.render(result)


@click.command("pprof", cls=TfprofCommand, short_help="pprof profile of the code/scope/op view.")
@input_options
@click.option(
    "-o",
    "--output",
    "output",
    default="profile.pb.gz",
    show_default=True,
    metavar="FILE",
    help="Where to write the gzip-compressed pprof profile.",
)
@click.option(
    "--view",
    type=click.Choice(PPROF_VIEWS),
    default="code",
    show_default=True,
    help="The view whose nodes become pprof's stacks.",
)
@click.option(
    "--select",
    default="micros",
    show_default=True,
    callback=_parse_select,
    metavar="A,B",
    help="Sample types (comma-separated): " + ", ".join(pprof.PPROF_SELECTS) + ".",
)
@click.option("--step", default=-1, type=int, metavar="N", help="Only step N (default: mean).")
@click.option(
    "--extended",
    is_flag=True,
    help="Extended format (labels) even for the code view with one select.",
)
@frame_options("--user-code")
@click.pass_context
def pprof_command(
    ctx: click.Context,
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    output: str,
    view: str,
    select: tuple[str, ...],
    step: int,
    extended: bool,
    user_code: bool | None,
    user_include: tuple[str, ...],
    user_exclude: tuple[str, ...],
) -> None:
    """Writes a pprof profile of one view: tfprof's own pprof for the code view with
    one select, the extended format (several sample types, labels) otherwise.

    \b
    Examples:
      tfprof-lite pprof tfprof_out/profile_4 -o code.pb.gz
      tfprof-lite pprof tfprof_out/profile_4 --all-frames -o all_frames.pb.gz
      tfprof-lite pprof tfprof_out --view scope --select micros,bytes -o scope.pb.gz
      pprof -top -sample_index=micros code.pb.gz
    """
    given = query_options(ctx, Options.from_dict(ProfileOptionBuilder().build()))
    opts = pprof_options(given, view, select, step, extended)
    rules = user_code_from(user_code, user_include, user_exclude, default=True)
    opts = dataclasses.replace(opts, user_code=rules if view == "code" else None)
    check_output_path(output)  # before the profile is loaded
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    prof = load_profiler(spec, step)
    with Spinner(f"writing {output}"):
        result = _query(prof, view, opts, source_name(spec))
        data = _render(result)
        write_atomic(output, data)
    kind = "extended" if pprof_extended.is_extended(result) else "tfprof"
    frames = ""
    if view == "code":
        frames = ", user code" if opts.user_code is not None else ", all frames"
    index = "micros" if "micros" in result.opts.select else result.opts.select[0]
    click.echo(
        f"Wrote {style(shown(output), sys.stdout, bold=True)} ({view} view{frames}, "
        f"{kind} format, samples: count, {', '.join(result.opts.select)}); read it with: "
        f"pprof -top -sample_index={index} {shown(output)}"
    )


PPROF_COMMANDS: dict[str, click.Command] = {"pprof": pprof_command}
