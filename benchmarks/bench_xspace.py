"""XSpace benchmark: tfprof_lite against XProf's C++ converters, in one run.

On a real capture (by default the larger JAX H100 sample,
``shared/data/xspace/jax_h100_transformer_bf16``, 2.8 MB; ``--file`` names
another), fresh child processes time, in alternating rounds:

* XProf (PyPI ``xprof``): ``xprof.convert.raw_to_tool_data.xspace_to_tool_data(
  [copy], "overview_page", {"use_saved_result": False})``, the conversion call
  alone (the import is not timed), on a fresh copy of the file in a new
  temporary directory (XProf writes caches beside its input);
* ours: ``Profiler.load(FILE)`` (the call alone, after ``from tfprof_lite import
  Profiler``; lazy imports of the XSpace reader are in the call);
  ``tfprof-lite overview FILE`` and ``tfprof-lite report FILE -o out.html``, each a
  whole process (interpreter start, imports, reading, output) timed from outside.

Targets (ours/XProf, best of each side): the overview command <= 0.5x XProf's
``overview_page`` conversion, ``Profiler.load`` <= 0.25x, the report <= 1x one
XProf tool (``overview_page``, the cheapest tool that converts the whole file).
Ours runs on both decoder paths when the native XSpace decoder is built (the
default, and ``TFPROF_LITE_PURE_PYTHON=1``); otherwise both are the same code and
the pure path is measured once.

Every sample is one call in a fresh process (its first call: no warm caches on
either side). Each round runs every series ``--repeat`` times, the sides in turn, so a slow
spell of the (shared) machine falls on both sides; a figure is the best of
``--repeat`` x ``--rounds`` samples, with the min-max beside it, and the ratio
range is that of the per-round ratios (best of ours in the round over best of
XProf in the round); "median" is the ratio of the medians of all samples. CPU
seconds (all threads of the process) are shown too: XProf's converter runs some
stages on threads.

Memory: a child grows the capture to ``--size-mb`` MB (``make_xspace.py``: its
lines repeated with shifted times; ``--big`` makes it 1000 MB) and further
children open it with ``Profiler.load`` and with ``tfprof-lite overview``; their
peak RSS (``wait4``'s ``ru_maxrss``) over the file size is the figure, target
<= 2x. One more child only reads and decodes it (``decode_xspace_file`` with the
loader's event stat filter), the stage before the conversion, so that the
decoder's share of the peak shows apart; "net" is the peak above the RSS of
``import tfprof_lite.profiler`` over the file size. MB are 10^6 bytes throughout.
Each of those children runs under an address-space cap
(``--mem-cap-gb``) so that a run that grows past it fails alone instead of
starving the machine.

The children run with bytecode compiled (``compileall`` once, as an installed
package has it). Results go to stdout (a table) and ``bench_out/xspace.json``.

Run: ``python benchmarks/bench_xspace.py [--quick] [--file PATH] [--repeat R]
[--rounds N] [--size-mb MB | --big] [--no-memory | --memory-only] [--memory-paths P]``;
see ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

from xspace_rows import (
    XPROF_TOOL,
    Series,
    print_memory,
    print_speed,
    speed_rows,
)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PURE_ENV = "TFPROF_LITE_PURE_PYTHON"
SAMPLE = "jax_h100_transformer_bf16"
CHILD_TIMEOUT_S = 1800


# ================================================================== children
def _dump(path: str, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)


def child_xprof(path: str, out: str) -> None:
    """One XProf conversion of a fresh copy of ``path`` (the first of the process)."""
    from xprof.convert import raw_to_tool_data

    with tempfile.TemporaryDirectory(prefix="bench_xprof-") as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        shutil.copyfile(path, copy)
        start, cpu_start = time.perf_counter(), time.process_time()
        data, _ = raw_to_tool_data.xspace_to_tool_data(
            [copy], XPROF_TOOL, {"use_saved_result": False}
        )
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    if not data:
        raise SystemExit(f"XProf {XPROF_TOOL} returned no data for {path}")
    _dump(out, {"wall": wall, "cpu": cpu})


def child_load(path: str, out: str) -> None:
    """One call of ``Profiler.load(path)`` (the first of the process: what a user
    pays, lazy imports included)."""
    from tfprof_lite import Profiler

    start, cpu_start = time.perf_counter(), time.process_time()
    Profiler.load(path)
    _dump(out, {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu_start})


def child_grow(src: str, grown: str, size_mb: float, out: str) -> None:
    """Write the grown XSpace ``grown`` (``make_xspace.grow``)."""
    sys.path.insert(0, HERE)
    from make_xspace import grow

    _dump(out, {"copies": grow(src, grown, size_mb)})


# ================================================================== processes
@dataclass
class Done:
    """One finished child: wall and CPU seconds, peak RSS (MB), exit status."""

    wall: float
    cpu: float
    rss_mb: float
    status: int
    stderr: str = ""


def child_env(pure: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(PURE_ENV, None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # children use the compiled bytecode
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if pure:
        env[PURE_ENV] = "1"
    return env


def _cap(limit_bytes: int | None) -> Any:
    if limit_bytes is None:
        return None

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


def run(command: list[str], pure: bool = False, cap_bytes: int | None = None) -> Done:
    """Run ``command``; its own rusage (``wait4``), not that of earlier children."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            command,
            env=child_env(pure),
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=REPO,
            preexec_fn=_cap(cap_bytes),  # noqa: PLW1509 - setrlimit before exec
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    rss_mb = usage.ru_maxrss * 1024 / 1e6  # ru_maxrss is in KiB on Linux
    return Done(wall, usage.ru_utime + usage.ru_stime, rss_mb, proc.returncode, text)


def run_child(
    kind: str, args: list[str], pure: bool = False, script: str = __file__
) -> dict[str, Any]:
    """A measuring child of ``script`` (this one by default), run as
    ``script --child KIND ARGS... --to OUT``; its JSON result."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = handle.name
    try:
        command = [sys.executable, os.path.abspath(script), "--child", kind, *args, "--to", out]
        done = run(command, pure)
        if done.status != 0:
            raise SystemExit(f"the {kind} child failed ({done.status}): {done.stderr[-2000:]}")
        with open(out, encoding="utf-8") as handle:
            result: dict[str, Any] = json.load(handle)
    finally:
        os.unlink(out)
    return result


def run_cli(words: list[str], pure: bool) -> Done:
    done = run([sys.executable, "-m", "tfprof_lite", *words], pure)
    if done.status != 0:
        raise SystemExit(f"tfprof-lite {words[0]} failed: {done.stderr.strip()[-2000:]}")
    return done


def native_built() -> bool:
    """Whether the native XSpace decoder is built and used (then both paths are measured)."""
    probe = (
        "try:\n from tfprof_lite.formats.xspace.wire.native import available\n"
        " print(available())\nexcept ImportError:\n print(False)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=child_env(False), capture_output=True, text=True
    )
    return done.stdout.strip() == "True"


def one_round(path: str, paths: list[tuple[str, bool]], repeat: int, tmp: str) -> dict[str, Any]:
    """Every series once, ``repeat`` fresh processes each, XProf's first."""
    got: dict[str, Any] = {}
    xprof = [run_child("xprof", ["--file", path]) for _ in range(repeat)]
    got["xprof"] = ([x["wall"] for x in xprof], [x["cpu"] for x in xprof])
    for label, pure in paths:
        load = [run_child("load", ["--file", path], pure) for _ in range(repeat)]
        got[f"load/{label}"] = ([x["wall"] for x in load], [x["cpu"] for x in load])
        for name, words in (
            ("overview", ["overview", path]),
            ("report", ["report", path, "-o", os.path.join(tmp, "report.html")]),
        ):
            runs = [run_cli(words, pure) for _ in range(repeat)]
            got[f"{name}/{label}"] = ([d.wall for d in runs], [d.cpu for d in runs])
    return got


# ================================================================== memory
def memory_rows(
    src: str, size_mb: float, paths: list[tuple[str, bool]], cap_gb: float
) -> list[dict[str, Any]]:
    """Peak RSS opening the grown file, per path: ``Profiler.load`` and ``overview``."""
    out = []
    with tempfile.TemporaryDirectory(prefix="bench_xspace_big-") as tmp:
        big = os.path.join(tmp, "grown.xplane.pb")
        start = time.perf_counter()
        run_child("grow", ["--file", src, "--size-mb", str(size_mb), "--out", big])
        size = os.path.getsize(big) / 1e6
        print(f"-- grown file: {size:.1f} MB in {time.perf_counter() - start:.1f}s", flush=True)
        load = f"from tfprof_lite import Profiler; Profiler.load({big!r})"
        decode = (
            "from tfprof_lite.formats.xspace.read.load import EVENT_STATS\n"
            "from tfprof_lite.formats.xspace.wire.decode import decode_xspace_file\n"
            f"decode_xspace_file({big!r}, event_stats=EVENT_STATS)"
        )
        bare = run([sys.executable, "-c", "import tfprof_lite.profiler"])
        for label, pure in paths:
            for what, command in (
                ("read + decode", [sys.executable, "-c", decode]),
                ("Profiler.load", [sys.executable, "-c", load]),
                ("tfprof-lite overview", [sys.executable, "-m", "tfprof_lite", "overview", big]),
            ):
                done = run(command, pure, int(cap_gb * 2**30))
                ok = done.status == 0
                out.append(
                    {
                        "operation": f"{what} [{label}]",
                        "file_mb": size,
                        "peak_rss_mb": done.rss_mb,
                        "ratio": done.rss_mb / size,
                        "net_ratio": (done.rss_mb - bare.rss_mb) / size,
                        "import_rss_mb": bare.rss_mb,
                        "wall_s": done.wall,
                        "cpu_s": done.cpu,
                        "completed": ok,
                        "error": "" if ok else done.stderr.strip()[-300:],
                    }
                )
                print(f"   {what} [{label}]: {done.rss_mb:.0f} MB, {done.wall:.1f}s", flush=True)
    return out


# ================================================================== parent
def find_sample() -> str | None:
    """The larger JAX capture (``TFPROF_LITE_SHARED_DATA`` names ``shared/data``)."""
    configured = os.environ.get("TFPROF_LITE_SHARED_DATA")
    bases = [configured] if configured else []
    bases += [os.path.join(REPO, "shared", "data"), os.path.join(REPO, "..", "shared", "data")]
    bases += [os.path.join(REPO, "..", "..", "shared", "data")]
    for base in bases:
        found = sorted(
            glob.glob(os.path.join(base, "xspace", SAMPLE, "plugins/profile/*/*.xplane.pb"))
        )
        if found:
            return os.path.abspath(found[-1])
    return None


def parent_main(args: argparse.Namespace) -> int:
    # This process imports neither XProf nor tfprof_lite: a child's ru_maxrss
    # starts from its parent's peak (Linux keeps it across exec).
    path = args.file or find_sample()
    if path is None or not os.path.isfile(path):
        print(f"no XSpace to measure ({path or SAMPLE + ' not found'}); pass --file PATH")
        return 2
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", os.path.join(REPO, "tfprof_lite")],
        env=child_env(False),
        check=True,
    )
    native = native_built()
    paths = [("default", False), ("pure", True)] if native else [("pure", True)]
    load_before = list(os.getloadavg())
    series: dict[str, Series] = {}
    with tempfile.TemporaryDirectory(prefix="bench_xspace-") as tmp:
        for i in range(0 if args.memory_only else args.rounds):
            start = time.perf_counter()
            for key, (wall, cpu) in one_round(path, paths, args.repeat, tmp).items():
                series.setdefault(key, Series()).add(wall, cpu)
            print(f"-- round {i + 1}/{args.rounds}: {time.perf_counter() - start:.1f}s", flush=True)
    load_after = list(os.getloadavg())
    rows = speed_rows(series, paths) if series else []
    memory_paths = [p for p in paths if args.memory_paths in ("both", p[0])]
    memory = (
        [] if args.no_memory else memory_rows(path, args.size_mb, memory_paths, args.mem_cap_gb)
    )
    print(f"\nfile: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    print(f"native XSpace decoder: {'built' if native else 'not built (pure path only)'}")
    print(
        f"load average before/after: {load_before[0]:.2f}/{load_after[0]:.2f}"
        f" on {os.cpu_count()} CPUs"
    )
    if rows:
        print_speed(rows)
    if memory:
        print_memory(memory)
    result = {
        "file": path,
        "native": native,
        "config": {k: v for k, v in vars(args).items() if k not in ("child", "to")},
        "cpus": os.cpu_count(),
        "load_average": {"before": load_before, "after": load_after},
        "series": {k: asdict(v) for k, v in series.items()},
        "speed": [dict(asdict(r), ratio=r.ratio, ok=r.ok) for r in rows],
        "memory": memory,
    }
    out = args.out or os.path.join(REPO, "bench_out", "xspace.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2)
        handle.write("\n")
    print(f"\nwrote {out}")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--file", help=f"the XSpace to measure (default: the {SAMPLE} sample)")
    parser.add_argument("--repeat", type=int, default=3, help="samples per series per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of XProf and ours, in turn")
    parser.add_argument(
        "--size-mb", type=float, default=100.0, help="size of the grown file for the memory run"
    )
    parser.add_argument(
        "--big", action="store_true", help="grow the file to 1000 MB (--size-mb 1000)"
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the grown-file memory run")
    parser.add_argument(
        "--memory-only", action="store_true", help="only the grown-file memory run (no timing)"
    )
    parser.add_argument(
        "--memory-paths",
        choices=("both", "default", "pure"),
        default="both",
        help="the decoder paths of the memory run (default: both)",
    )
    parser.add_argument(
        "--mem-cap-gb", type=float, default=8.0, help="address-space cap of each memory child (GB)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="1 repeat, 1 round, a 20 MB grown file"
    )
    parser.add_argument("--out", default=None, help="JSON output (default bench_out/xspace.json)")
    hidden = argparse.SUPPRESS
    parser.add_argument("--child", choices=("xprof", "load", "grow"), help=hidden)
    parser.add_argument("--to", help=hidden)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeat < 1:
        parser.error("--rounds and --repeat must be at least 1")
    if args.size_mb <= 0 or args.mem_cap_gb <= 0:
        parser.error("--size-mb and --mem-cap-gb must be positive")
    if args.big:
        args.size_mb = 1000.0
    if args.quick:
        args.repeat, args.rounds = 1, 1
        args.size_mb = min(args.size_mb, 20.0)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child == "xprof":
        child_xprof(args.file, args.to)
    elif args.child == "load":
        child_load(args.file, args.to)
    elif args.child == "grow":
        child_grow(args.file, args.out, args.size_mb, args.to)
    else:
        return parent_main(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
