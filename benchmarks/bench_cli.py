"""Start-up time of the command line: ``--help``, ``import tfprof_lite`` and ``scope``.

Each measurement is a fresh interpreter (``subprocess``), timed end to end from
the parent, best of ``--repeat`` runs (the first run of each warms the file
cache and is not counted). Measured:

* ``import tfprof_lite`` (``python -c``);
* ``tfprof-lite --help`` (the installed console script, or ``python -m
  tfprof_lite`` when it is not installed);
* ``tfprof-lite scope PROFILE`` on a small hand-made profile (``--nodes`` nodes in
  nested name scopes, one step), written to a temporary directory with
  ``Profiler.serialize_to_string``.

No TensorFlow is imported, here or in the children. Results are printed as a
table with the targets and written to ``bench_out/cli.json``.

Run: ``python benchmarks/bench_cli.py [--repeat N] [--nodes N] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # ``tests.handmade``: the profile builders

OUT_JSON = os.path.join(ROOT, "bench_out", "cli.json")

#: name -> target wall time in seconds.
TARGETS = {"import": 0.25, "help": 0.25, "scope": 0.30}


def make_profile(directory: str, n_nodes: int) -> str:
    """Writes a profile of ``n_nodes`` nodes (one step) and returns its path."""
    import tfprof_lite
    from tests.handmade import CPU, graph_def, node, ns, run_meta

    names = [f"block_{i // 10}/layer_{i % 10}/op_{i}" for i in range(n_nodes)]
    nodes = [node(name, "MatMul" if i % 2 else "Add") for i, name in enumerate(names)]
    records = [ns(name, start=(i + 1) * 10, dur=5 + i % 7) for i, name in enumerate(names)]
    prof = tfprof_lite.Profiler(graph_def(nodes))
    prof.add_step(1, run_meta([(CPU, records)]))
    path = os.path.join(directory, "profile_1")
    with open(path, "wb") as handle:
        handle.write(prof.serialize_to_string())
    return path


def best_of(argv: list[str], repeat: int) -> float:
    """Best wall time in seconds of ``repeat`` runs of ``argv`` (after one warm-up)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="0")
    times = []
    for run in range(repeat + 1):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        if run:
            times.append(time.perf_counter() - start)
    return min(times)


def cli_argv() -> list[str]:
    script = shutil.which("tfprof-lite", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "tfprof_lite"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=10, help="runs per command (best counts)")
    parser.add_argument("--nodes", type=int, default=100, help="nodes in the scope profile")
    parser.add_argument("--quick", action="store_true", help="3 runs per command")
    parser.add_argument("--out", default=OUT_JSON)
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else args.repeat

    cli = cli_argv()
    with tempfile.TemporaryDirectory() as tmp:
        profile = make_profile(tmp, args.nodes)
        commands = {
            "import": [sys.executable, "-c", "import tfprof_lite"],
            "help": [*cli, "--help"],
            "scope": [*cli, "scope", profile],
        }
        timings = {name: best_of(command, repeat) for name, command in commands.items()}

    print(f"best of {repeat} runs ({os.cpu_count()} cores, Python {platform.python_version()})")
    print(f"{'command':<28} {'seconds':>8} {'target':>8}  ok")
    labels = {
        "import": "import tfprof_lite",
        "help": "tfprof-lite --help",
        "scope": f"tfprof-lite scope ({args.nodes} nodes)",
    }
    results: dict[str, Any] = {}
    for name, seconds in timings.items():
        ok = seconds <= TARGETS[name]
        print(f"{labels[name]:<28} {seconds:>8.3f} {TARGETS[name]:>8.2f}  {'yes' if ok else 'NO'}")
        results[name] = {"seconds": seconds, "target": TARGETS[name], "ok": ok}
    results["config"] = {"repeat": repeat, "nodes": args.nodes, "cli": cli}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1)
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
