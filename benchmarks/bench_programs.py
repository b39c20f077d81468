"""XLA program tools benchmark: ``op-profile`` and ``memory-viewer`` against XProf's.

On a real capture (by default the larger JAX H100 sample,
``shared/data/xspace/jax_h100_transformer_bf16``, 2.8 MB; ``--file`` names
another), fresh child processes time, in alternating rounds:

* XProf (PyPI ``xprof``), the conversion calls alone (imports not timed), on a
  fresh copy of the file in a new temporary directory (XProf writes caches
  beside its input): ``xspace_to_tool_data([copy], "op_profile",
  {"use_saved_result": False})``; and for the memory viewer
  ``xspace_to_tool_names([copy])`` (which writes the ``*.hlo_proto.pb`` files
  the memory viewer reads; without it the tool answers nothing) then
  ``xspace_to_tool_data([copy], "memory_viewer", {"module_name": "M(P)",
  "program_id": P})`` for the program with the most time (``--program``);
* ours, two ways each: the whole command (``tfprof-lite op-profile FILE``,
  ``tfprof-lite memory-viewer FILE --program M``), a process timed from outside
  (interpreter start, imports, reading, output); and the calls alone in a
  process that has imported them (``load_programs``, then ``op_profile(...)``
  and its text; or ``read_program_records`` and ``program_memory`` of the
  program named), as XProf's figure is its call alone.

Targets (ours/XProf, best of each side): both commands <= 0.5x XProf's
conversion of its own tool. Each round runs every series ``--repeat`` times;
a figure is the best of ``--repeat`` x ``--rounds`` samples; the ratio range is
that of the per-round ratios (best of ours in the round over best of XProf in
the round). Results go to stdout and ``bench_out/programs.json``.

Run: ``python benchmarks/bench_programs.py [--file PATH] [--repeat R] [--rounds N]
[--quick] [--out PATH]``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_xspace import REPO, Series, _dump, run, run_child, run_cli  # noqa: E402

SAMPLE = "jax_h100_transformer_bf16"
TARGET = 0.5


def child_xprof(path: str, tool: str, module: str, program: str, out: str) -> None:
    """One XProf conversion of ``tool`` on a fresh copy of ``path``."""
    from xprof.convert import raw_to_tool_data as convert

    with tempfile.TemporaryDirectory(prefix="bench_xprof-") as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        shutil.copyfile(path, copy)
        start, cpu = time.perf_counter(), time.process_time()
        if tool == "op_profile":
            data, _ = convert.xspace_to_tool_data([copy], tool, {"use_saved_result": False})
        else:
            convert.xspace_to_tool_names([copy])
            params = {"use_saved_result": False, "module_name": f"{module}({program})",
                      "program_id": program}  # fmt: skip
            data, _ = convert.xspace_to_tool_data([copy], tool, params)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if not data:
        raise SystemExit(f"XProf {tool} returned no data for {path}")
    _dump(out, {"wall": wall, "cpu": cpu})


def child_ours(path: str, tool: str, module: str, out: str) -> None:
    """Our calls alone (after their imports), as the command makes them: the
    programs read (no model), then the op profile and its text, or the memory
    of the programs named ``module`` (``--program``)."""
    from tfprof_lite.formats.xspace.read.programs import load_programs
    from tfprof_lite.formats.xspace.read.records import read_program_records
    from tfprof_lite.programs.buffers import program_memory
    from tfprof_lite.programs.hlo import Program
    from tfprof_lite.programs.op_profile import op_profile
    from tfprof_lite.programs.op_profile_text import profile_text
    from tfprof_lite.proto.xla_program import parse_program

    start, cpu = time.perf_counter(), time.process_time()
    if tool == "op_profile":
        xla, steps = load_programs(path)
        assert xla is not None
        profile_text(op_profile(xla, steps))
    else:
        for record in read_program_records(path):
            if record.module == module:
                program = Program(parse_program(record.hlo))
                program_memory(program, record.program_id, record.module).to_text()
    _dump(out, {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu})


def _child(kind: str, args: list[str]) -> dict[str, Any]:
    return run_child(kind, args, script=__file__)


def _busiest(path: str) -> tuple[str, str]:
    """(module, program id) of the program with the most op time in ``path``."""
    from tfprof_lite.formats.xspace.read.programs import load_programs

    xla, _ = load_programs(path)
    assert xla is not None, f"{path}: no XLA programs"
    row = int(xla.program_time_ps().argmax())
    return xla.programs[row].module, str(xla.programs[row].program_id)


def one_round(path: str, module: str, program: str, repeat: int) -> dict[str, Series]:
    """Every series once, ``repeat`` fresh processes each, XProf's first."""
    series: dict[str, Series] = {}
    commands = (
        ("op_profile", ["op-profile", path]),
        ("memory_viewer", ["memory-viewer", path, "--program", module]),
    )
    for tool, command in commands:
        theirs = [_child("xprof", [path, tool, module, program]) for _ in range(repeat)]
        calls = [_child("ours", [path, tool, module]) for _ in range(repeat)]
        procs = [run_cli(command, False) for _ in range(repeat)]
        for name, samples in (("xprof", theirs), ("call", calls)):
            series.setdefault(f"{tool}:{name}", Series()).add(
                [s["wall"] for s in samples], [s["cpu"] for s in samples]
            )
        series.setdefault(f"{tool}:process", Series()).add(
            [d.wall for d in procs], [d.cpu for d in procs]
        )
    return series


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round of one sample each")
    parser.add_argument("--out", default=os.path.join(REPO, "bench_out", "programs.json"))
    parser.add_argument("--child", nargs="+")
    parser.add_argument("--to", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = args.rounds = 1
    if args.child:
        kind, *rest = [*args.child, args.to]
        (child_xprof if kind == "xprof" else child_ours)(*rest)
        return 0
    path = args.file or next(iter(glob.glob(os.path.join(
        REPO, "..", "shared", "data", "xspace", SAMPLE, "plugins", "profile", "*", "*.xplane.pb"
    ))), None)  # fmt: skip
    if path is None:
        raise SystemExit("no sample: pass --file PATH")
    module, program = _busiest(path)
    run([sys.executable, "-m", "compileall", "-q", os.path.join(REPO, "tfprof_lite")])
    merged: dict[str, Series] = {}
    ratios: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        got = one_round(path, module, program, args.repeat)
        for key, series in got.items():
            merged.setdefault(key, Series()).add(series.wall[0], series.cpu[0])
        for tool in ("op_profile", "memory_viewer"):
            for how in ("process", "call"):
                ratio = got[f"{tool}:{how}"].best() / got[f"{tool}:xprof"].best()
                ratios.setdefault(f"{tool}:{how}", []).append(ratio)
    print(f"file: {path} ({os.path.getsize(path) / 1e6:.1f} MB), program {module}({program}), "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"{'row':<28} {'ours best s':>11} {'XProf best s':>12} {'ratios per round':>30}")
    for key, values in ratios.items():
        tool, how = key.split(":")
        text = " / ".join(f"{r:.2f}" for r in values)
        print(f"{tool + ' ' + how:<28} {merged[key].best():>11.3f} "
              f"{merged[tool + ':xprof'].best():>12.3f} {text:>30}  target {TARGET}")  # fmt: skip
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump({"file": path, "ratios": ratios,
                   "best": {k: s.best() for k, s in merged.items()}}, handle, indent=1)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
