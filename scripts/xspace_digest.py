#!/usr/bin/env python
"""Write what the XSpace conversion makes of some files, to compare two checkouts.

For each XSpace file (a ``*.xplane.pb``, or every one under a folder) it writes
``OUT/<name>.txt``: the conversion's plan (how steps were found, the graph nodes,
every step's records: device, node, label, start and duration, the tracer
durations, the call stacks) and the model's nodes, then the text of
``overview --json``, ``op``, ``scope``, ``graph``, ``code``, ``kernels --json``,
``memory --all-steps`` and the ``timeline`` of the CLI. A file the conversion
rejects gets its error line instead. ``--hand-made`` adds the hand-made inputs of
the decoder tests and ``--fuzz N`` that many mutated ones (plan only), so edge
cases are compared too.

Run it once per checkout and compare the folders::

    PYTHONPATH=/path/to/old python scripts/xspace_digest.py /tmp/old FILES...
    PYTHONPATH=/path/to/new python scripts/xspace_digest.py /tmp/new FILES...
    diff -r /tmp/old /tmp/new

(``--hand-made`` and ``--fuzz`` import the ``tests`` package, the one on
``PYTHONPATH`` first; set ``TFPROF_LITE_SHARED_DATA`` for both runs so that the
mutated inputs start from the same seed files.)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
_VIEW = ["-max_depth", "10000", "-select", "micros,occurrence,device,op_types"]
COMMANDS = (
    ["overview", "--json"],
    ["op", *_VIEW],
    ["scope", *_VIEW],
    ["graph", *_VIEW],
    ["code", "-max_depth", "10000", "-select", "micros,occurrence"],
    ["kernels", "--json"],
    ["memory", "--all-steps"],
)
_SHOWN = ("devices", "dev", "name", "label", "start", "rel")


def plan_text(raw: bytes) -> str:
    """The conversion's plan and the model's nodes for XSpace bytes ``raw``."""
    from tfprof_lite.formats.xspace.read import conversion as xspace
    from tfprof_lite.formats.xspace.wire import decode as xplane
    from tfprof_lite.model.profile import ProfileModel

    model = ProfileModel()
    plan = xspace.convert(xplane.decode_xspace(raw, "input"), model)
    lines = [f"source {plan.source}", f"numbers {plan.numbers}"]
    lines += [f"node {n.name!r} {n.op!r}" for n in plan.nodes]
    for i, cols in enumerate(plan.columns):
        lines.append(f"step {i} devices {cols.devices} rows {len(cols)}")
        rows = zip(cols.dev.tolist(), cols.name, cols.label, cols.start.tolist(), cols.rel.tolist())
        lines += [f"  {d} {n!r} {lb!r} {s} {r}" for d, n, lb, s, r in rows]
        for key, value in sorted(vars(cols).items()):
            if key not in _SHOWN:
                shown = value.tolist() if isinstance(value, np.ndarray) else value
                lines.append(f"  .{key} {shown!r}")
    lines.append(f"tracer {[[int(ns) for ns in step] for step in plan.tracer_ns]}")
    code = plan.code if isinstance(plan.code, dict) else plan.code.stacks()
    lines += [f"code {k!r} {v!r}" for k, v in code.items()]
    for nid, name in enumerate(model.names):
        lines.append(
            f"model {name!r} {model.ops[nid]!r} {model.canonical_device[nid]!r} "
            f"{sorted(model.op_types[nid])} {model.traces[nid]!r}"
        )
    return "\n".join(lines)


def cli_text(path: Path, scratch: Path) -> str:
    """The CLI's outputs for file ``path`` (the timeline written under ``scratch``)."""
    from tfprof_lite.cli import cli

    runner = CliRunner()
    parts = []
    for command in COMMANDS:
        result = runner.invoke(cli, [*command, str(path)])
        parts.append(f"=== {' '.join(command)} rc={result.exit_code}\n{result.output}")
    trace = scratch / "timeline.json"
    result = runner.invoke(cli, ["timeline", str(path), "-o", str(trace)])
    output = result.output.replace(str(trace), "TIMELINE")
    parts.append(f"=== timeline rc={result.exit_code}\n{output}")
    if trace.exists():
        parts.append(trace.read_text())
        trace.unlink()
    return "\n".join(parts)


def _files(paths: list[str]) -> Iterator[tuple[str, Path]]:
    for given in paths:
        path = Path(given)
        found = sorted(path.rglob("*.xplane.pb")) if path.is_dir() else [path]
        for file in found:
            name = "_".join(file.resolve().parts[1:][-5:]).replace(".xplane.pb", "")  # no root
            yield name, file


def _extra(hand_made: bool, fuzz: int) -> Iterator[tuple[str, bytes]]:
    sys.path.append(str(ROOT))  # the tests package; tfprof_lite as PYTHONPATH has it
    if hand_made:
        from tests import xspace_cases

        for name, make in xspace_cases.MESSAGES.items():
            yield f"hand_{name}", bytes(make().SerializeToString())
        for name, data in xspace_cases.WIRE.items():
            yield f"wire_{name}", bytes(data)
    if fuzz:
        from tests.fuzz.cases import Corpus
        from tests.fuzz.xspace import xspace_case

        corpus = Corpus()
        for index in range(fuzz):
            yield f"fuzz_{index:04d}", xspace_case(corpus, index, 12345).files["xspace"]


def _guarded(make: Callable[[bytes], str], raw: bytes) -> str:
    try:
        return make(raw)
    except Exception as err:  # noqa: BLE001 - the error line is the digest
        return f"ERROR {type(err).__name__}: {err}"


def main(argv: list[str] | None = None) -> int:
    """Write the digests; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the digests to")
    parser.add_argument("paths", nargs="*", help="XSpace files, or folders holding them")
    parser.add_argument("--hand-made", action="store_true", help="add the decoder tests' inputs")
    parser.add_argument("--fuzz", type=int, default=0, help="add this many mutated inputs")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, file in _files(args.paths):
        text = _guarded(plan_text, file.read_bytes()) + "\n" + cli_text(file, args.out)
        (args.out / f"{name}.txt").write_text(text)
        count += 1
    for name, raw in _extra(args.hand_made, args.fuzz):
        (args.out / f"{name}.txt").write_text(_guarded(plan_text, raw))
        count += 1
    print(f"wrote {count} digests to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
