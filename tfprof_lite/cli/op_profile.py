"""``tfprof-lite op-profile`` and ``tfprof-lite roofline``: the XLA program tools.

Contract: both load the profile like every command (:mod:`tfprof_lite.cli.inputs`;
an XSpace file, run directory or logdir) and read its compiled XLA programs
(:class:`~tfprof_lite.model.xla_programs.XlaPrograms`). ``op-profile`` prints
:func:`~tfprof_lite.programs.op_profile_text.profile_text` grouped ``--by``
program, category or scope, or with ``--json`` the
:meth:`~tfprof_lite.programs.op_profile.OpProfile.to_dict` document.
``roofline`` prints the points' table, or ``--json``, or writes ``-o
FILE.svg``/``FILE.html`` (atomically). ``--peak-flops`` / ``--peak-bandwidth``
give the peaks (``989e12``, ``989T``, ``3.35T``) where the profile has none
(CPU) or to override the GPU table. A profile without XLA programs is one
error line.
"""

from __future__ import annotations

import re

import click

from tfprof_lite.base.shown import shown
from tfprof_lite.base.writing import write_atomic, write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.cli.inputs import InputSpec, input_options, load_xla_programs
from tfprof_lite.errors import InvalidInputError, UsageError
from tfprof_lite.programs.op_profile import OpProfile, op_profile
from tfprof_lite.programs.peaks import given_peaks

__all__ = ["PROGRAM_COMMANDS", "op_profile_command", "parse_rate", "roofline_command"]

_RATE = re.compile(r"\s*(\d+(?:\.\d*)?(?:e[+-]?\d+)?)\s*([kKMGTP]?)\s*", re.IGNORECASE)
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}


def parse_rate(text: str | None, what: str) -> float | None:
    """A per-second rate given as ``989e12`` or with an SI suffix (``989T``)."""
    if text is None:
        return None
    match = _RATE.fullmatch(text)
    if not match or float(match[1]) <= 0:
        raise UsageError(f"{what} {text!r}: give a positive number per second, e.g. 989e12 or 989T")
    return float(match[1]) * _SCALE[match[2].lower()]


def _profile(spec: InputSpec, peak_flops: str | None, peak_bandwidth: str | None) -> OpProfile:
    """The op profile of the profile ``spec`` names, with the peaks given."""
    flops = parse_rate(peak_flops, "--peak-flops")
    bandwidth = parse_rate(peak_bandwidth, "--peak-bandwidth")
    xla, steps = load_xla_programs(spec)
    if xla is None:
        where = shown(spec.profile) if spec.profile else "the profile"
        raise InvalidInputError(
            f"{where}: holds no compiled XLA programs; pass an XSpace (*.xplane.pb) or a "
            "TensorBoard logdir of a JAX run or a TensorFlow run with XLA"
        )
    peaks = None
    if flops or bandwidth:
        name = xla.devices[0].model if xla.devices else "CPU (host)"
        peaks = given_peaks(name or "device", flops, bandwidth)
    return op_profile(xla, steps, peaks)


_PEAK_OPTIONS = (
    click.option("--peak-flops", help="Peak FLOP/s of the device (e.g. 989T); needed on CPU."),
    click.option("--peak-bandwidth", help="Peak memory bytes/s (e.g. 3.35T); needed on CPU."),
)


@click.command(
    "op-profile",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="XLA op time, FLOPs, bytes, roofline bound and headroom.",
)
@input_options
@click.option(
    "--by", type=click.Choice(["program", "category", "scope"]), default="program",
    show_default=True, help="Group ops by program > category, by category, or by scope.",
)  # fmt: skip
@click.option("--top", default=20, show_default=True, type=click.IntRange(min=1),
              help="Most ops listed per group and in the headroom table.")  # fmt: skip
@_PEAK_OPTIONS[0]
@_PEAK_OPTIONS[1]
@click.option("--json", "as_json", is_flag=True, help="Print the op profile as JSON.")
def op_profile_command(
    profile: tuple[str, ...], graph: str | None, run_meta: tuple[str, ...],
    op_log: str | None, by: str, top: int, peak_flops: str | None,
    peak_bandwidth: str | None, as_json: bool,
) -> None:  # fmt: skip
    """The op profile of the profile's compiled XLA programs: per HLO op its
    occurrences, time, FLOPs, bytes, FLOP rate, bandwidth, arithmetic intensity,
    what bounds it and how far from the device's peak, and the headroom: what
    each op would save at its roofline bound.

    \b
    Examples:
      tfprof-lite op-profile logdir/
      tfprof-lite op-profile run/host.xplane.pb --by scope
      tfprof-lite op-profile cpu_run/ --peak-flops 2T --peak-bandwidth 50G --json
    """
    from tfprof_lite.programs.op_profile_text import profile_text

    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    found = _profile(spec, peak_flops, peak_bandwidth)
    if as_json:
        import json

        write_stdout(json.dumps(found.to_dict(), indent=1) + "\n")
    else:
        write_stdout(profile_text(found, by, top))


@click.command(
    "roofline",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Roofline chart of the XLA programs and their top ops.",
)
@input_options
@click.option("--top", default=20, show_default=True, type=click.IntRange(min=1),
              help="How many ops (by self time) get a point.")  # fmt: skip
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Write the chart to FILE.svg or FILE.html.")  # fmt: skip
@_PEAK_OPTIONS[0]
@_PEAK_OPTIONS[1]
@click.option("--json", "as_json", is_flag=True, help="Print the points as JSON.")
def roofline_command(
    profile: tuple[str, ...], graph: str | None, run_meta: tuple[str, ...],
    op_log: str | None, top: int, output: str | None, peak_flops: str | None,
    peak_bandwidth: str | None, as_json: bool,
) -> None:  # fmt: skip
    """The roofline of the profile's compiled XLA programs: one point per program
    and per top op (arithmetic intensity against achieved FLOP/s), under the
    device's memory and compute roofs.

    \b
    Examples:
      tfprof-lite roofline logdir/ -o roofline.svg
      tfprof-lite roofline run/host.xplane.pb --json
    """
    from tfprof_lite.programs.roofline import roofline, roofline_html, roofline_svg

    if output is not None and not output.endswith((".svg", ".html", ".htm")):
        raise UsageError(f"-o {output!r}: name a .svg or .html file")
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    chart = roofline(_profile(spec, peak_flops, peak_bandwidth), top)
    if output is not None:
        text = roofline_svg(chart) if output.endswith(".svg") else roofline_html(chart)
        write_atomic(output, text)
        write_stdout(f"wrote {output} ({len(chart.points)} points)\n")
    elif as_json:
        import json

        write_stdout(json.dumps(chart.to_dict(), indent=1) + "\n")
    else:
        write_stdout(chart.to_text())


PROGRAM_COMMANDS: dict[str, click.Command] = {
    "op-profile": op_profile_command,
    "roofline": roofline_command,
}
