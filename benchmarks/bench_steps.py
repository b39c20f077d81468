"""Many-step benchmark: every command on a 20,000-step XSpace against XProf.

A JAX CPU loop of ``--steps`` (default 20,000) tiny steps, each in
``StepTraceAnnotation("train")``, is captured in a child process
(``tests/jax_many_steps.py``: an 8x8 matmul step, the loop's own
``perf_counter`` time per step in ``capture.json``), unless ``--capture`` names
an XSpace file to use instead. Then, in ``--rounds`` rounds, fresh processes
time, the sides in turn so that a slow spell of the (shared) machine falls on
both:

* XProf (PyPI ``xprof``): the ``overview_page`` conversion of a fresh copy of
  the file, the call alone (``bench_xspace.child_xprof``);
* ours: ``tfprof-lite overview FILE``, ``memory FILE``, ``advise FILE`` and
  ``report FILE -o out.html``, each a whole process (interpreter start,
  imports, reading, output), timed from outside, with its peak RSS
  (``wait4``'s ``ru_maxrss``).

Each figure is the best of ``--repeat`` x ``--rounds`` samples; the ratio
range is that of the per-round ratios (ours' best in the round over XProf's
best in the round). Target: ``overview`` <= 0.5x XProf's ``overview_page``
conversion; the other commands are shown against the same conversion. Also
printed: the step count and mean step time the overview reads against the
loop's own record (when the capture was made here), the output lines of
``memory`` and ``advise`` and the report's size (a many-step capture must
give bounded summaries).

Results go to stdout (a table) and ``bench_out/steps.json``.

Run: ``python benchmarks/bench_steps.py [--quick] [--steps N] [--capture PATH]
[--repeat R] [--rounds N] [--pure]``; see ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_xspace import REPO, Series, child_env, run, run_child, run_cli  # noqa: E402

TARGET_OVERVIEW = 0.5
COMMANDS = ("overview", "memory", "advise", "report")
CAPTURE_TIMEOUT_S = 1800


def make_capture(steps: int, tmp: str) -> tuple[str, list[float]]:
    """A fresh JAX capture of ``steps`` steps: its XSpace and the loop's times."""
    out = os.path.join(tmp, "capture")
    os.makedirs(out)
    env = dict(child_env(False), JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="")
    script = os.path.join(REPO, "tests", "jax_many_steps.py")
    done = subprocess.run([sys.executable, script, out, str(steps)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=CAPTURE_TIMEOUT_S)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the capture failed ({done.returncode}): {done.stderr[-2000:]}")
    with open(os.path.join(out, "capture.json"), encoding="utf-8") as handle:
        meta = json.load(handle)
    return meta["xspace"], meta["step_seconds"]


def _words(command: str, path: str, tmp: str) -> list[str]:
    if command == "report":
        return ["report", path, "-o", os.path.join(tmp, "report.html")]
    return [command, path]


def one_round(path: str, repeat: int, pure: bool, tmp: str) -> dict[str, Series]:
    """XProf's conversion, then each command, ``repeat`` fresh processes each."""
    got: dict[str, Series] = {}
    script = os.path.join(HERE, "bench_xspace.py")
    xprof = [run_child("xprof", ["--file", path], script=script) for _ in range(repeat)]
    got["xprof"] = Series()
    got["xprof"].add([x["wall"] for x in xprof], [x["cpu"] for x in xprof])
    for command in COMMANDS:
        runs = [run_cli(_words(command, path, tmp), pure) for _ in range(repeat)]
        got[command] = Series()
        got[command].add([d.wall for d in runs], [d.cpu for d in runs])
        got[command + ":rss"] = Series()
        got[command + ":rss"].add([d.rss_mb for d in runs], [0.0] * len(runs))
    return got


def outputs(path: str, tmp: str, pure: bool) -> dict[str, Any]:
    """Lines of ``memory`` and ``advise``, the report's bytes, and the steps and
    mean step time of ``overview --json``."""
    env = child_env(pure)
    found: dict[str, Any] = {}
    for command in ("memory", "advise"):
        text = subprocess.run([sys.executable, "-m", "tfprof_lite", command, path], env=env,
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        found[f"{command}_lines"] = text.count("\n")
    found["report_bytes"] = os.path.getsize(os.path.join(tmp, "report.html"))
    text = subprocess.run([sys.executable, "-m", "tfprof_lite", "overview", path, "--json"],
                          env=env, capture_output=True, text=True, check=True).stdout  # fmt: skip
    overview = json.loads(text)
    mean = overview.get("step_time", {}).get("mean_micros")
    found["overview"] = {"steps": overview.get("steps"), "mean_micros": mean}
    return found


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--capture", help="an XSpace file to use instead of a fresh capture")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pure", action="store_true", help="TFPROF_LITE_PURE_PYTHON=1")
    parser.add_argument("--quick", action="store_true", help="2,000 steps, one sample each")
    parser.add_argument("--out", default=os.path.join(REPO, "bench_out", "steps.json"))
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = args.rounds = 1
        args.steps = min(args.steps, 2_000)
    tmp = tempfile.mkdtemp(prefix="bench_steps-")
    try:
        loop: list[float] = []
        path = args.capture
        if path is None:
            path, loop = make_capture(args.steps, tmp)
        run([sys.executable, "-m", "compileall", "-q", os.path.join(REPO, "tfprof_lite")])
        merged: dict[str, Series] = {}
        ratios: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            got = one_round(path, args.repeat, args.pure, tmp)
            for key, series in got.items():
                merged.setdefault(key, Series()).add(series.wall[0], series.cpu[0])
            for command in COMMANDS:
                ratios.setdefault(command, []).append(got[command].best() / got["xprof"].best())
        found = outputs(path, tmp, args.pure)
        _print(path, merged, ratios, found, loop)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as handle:
            best = {k: s.best() for k, s in merged.items()}
            loop_mean = statistics.mean(loop) * 1e6 if loop else None
            json.dump({"file": path, "ratios": ratios, "outputs": found,
                       "loop_mean_us": loop_mean, "best": best}, handle, indent=1)  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _print(path: str, merged: dict[str, Series], ratios: dict[str, list[float]],
           found: dict[str, Any], loop: list[float]) -> None:  # fmt: skip
    print(f"file: {path} ({os.path.getsize(path) / 1e6:.1f} MB), load {os.getloadavg()[0]:.2f}")
    xprof = merged["xprof"].best()
    print(f"XProf overview_page conversion: best {xprof:.3f} s")
    print(f"{'command (process)':<20} {'best s':>8} {'ratio':>7} {'per round':>20} "
          f"{'peak RSS MB':>12}  target")  # fmt: skip
    for command in COMMANDS:
        best = merged[command].best()
        rounds = " / ".join(f"{r:.2f}" for r in ratios[command])
        target = f"<= {TARGET_OVERVIEW}" if command == "overview" else "-"
        rss = merged[command + ":rss"].best()
        print(
            f"{command:<20} {best:>8.3f} {best / xprof:>7.2f} {rounds:>20} {rss:>12.0f}  {target}"
        )
    print(f"memory: {found['memory_lines']} lines, advise: {found['advise_lines']} lines, "
          f"report: {found['report_bytes'] / 1e6:.2f} MB")  # fmt: skip
    step = found["overview"]
    if loop:
        mean = statistics.mean(loop) * 1e6
        print(f"steps: {step.get('steps')} (loop {len(loop)}), mean step "
              f"{step.get('mean_micros')} us (loop {mean:.1f} us)")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
