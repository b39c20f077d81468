"""The XSpace reader's two paths side by side: the native decoder against
protobuf's parse and the pure walk (no TensorFlow).

For each ``*.xplane.pb`` (default: the JAX H100 captures of the shared data),
``decode_xspace`` runs in turns on the native path and with
``TFPROF_LITE_PURE_PYTHON=1``; it prints the best of ``--repeat`` runs each, their
ratio, and each path's peak memory above the process's baseline for an input of
``--scale`` copies of the file (an XSpace concatenated with itself is a valid
XSpace with every plane repeated), measured in a fresh child process. Both paths'
columns must be equal. Results go to ``bench_out/bench_xspace_decode.json``.

    python benchmarks/bench_xspace_decode.py [FILE ...] [--repeat 7] [--scale 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent.parent / "shared" / "data" / "xspace"
OUT = ROOT / "bench_out" / "bench_xspace_decode.json"
ENV = "TFPROF_LITE_PURE_PYTHON"

#: The child: decode ``scale`` copies of a file once; print the peak growth (bytes).
CHILD = """
import resource, sys
from tfprof_lite.formats.xspace.wire import decode as xplane
raw = open(sys.argv[1], "rb").read() * int(sys.argv[2])
xplane.decode_xspace(b"\\x0a\\x03\\x12\\x01a")
before = int(open("/proc/self/statm").read().split()[1]) * 4096
cols = xplane.decode_xspace(raw)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before)
"""


def _files(given: list[str]) -> list[Path]:
    if given:
        return [Path(p) for p in given]
    return sorted(DATA.glob("*/plugins/profile/*/*.xplane.pb"))


def _timed(raw: bytes, pure: bool) -> float:
    """Seconds of one ``decode_xspace(raw)`` on the chosen path."""
    from tfprof_lite.formats.xspace.wire import decode as xplane

    if pure:
        os.environ[ENV] = "1"
    try:
        started = time.perf_counter()
        xplane.decode_xspace(raw)
        return time.perf_counter() - started
    finally:
        os.environ.pop(ENV, None)


def _peak(path: Path, scale: int, pure: bool) -> int:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if pure:
        env[ENV] = "1"
    else:
        env.pop(ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(scale)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return int(done.stdout.strip())


def bench(path: Path, repeat: int, scale: int) -> dict[str, Any]:
    """Timings and peak memory of both paths on one file."""
    sys.path.insert(0, str(ROOT))
    from tests.xspacecols import column_differences
    from tfprof_lite.formats.xspace.wire import decode as xplane
    from tfprof_lite.formats.xspace.wire import native as xplane_native

    raw = path.read_bytes()
    native = xplane_native.native_columns(raw)
    if native is None:
        raise SystemExit(f"{path}: the native decoder is not built or declined the file")
    os.environ[ENV] = "1"
    pure = xplane.decode_xspace(raw)
    os.environ.pop(ENV, None)
    assert not column_differences(pure, native), column_differences(pure, native)
    times: dict[str, list[float]] = {"native": [], "pure": []}
    for _ in range(repeat):  # in turns, so that both see the same machine load
        for name, runs in times.items():
            runs.append(_timed(raw, name == "pure"))
    best = {name: min(runs) for name, runs in times.items()}
    size = len(raw) * scale
    peaks = {name: _peak(path, scale, name == "pure") for name in ("native", "pure")}
    return {
        "file": str(path), "bytes": len(raw), "events": len(native.event_line),
        "native_ms": best["native"] * 1e3, "pure_ms": best["pure"] * 1e3,
        "speedup": best["pure"] / best["native"], "scale": scale,
        "peak_x_input": {name: peak / size for name, peak in peaks.items()},
    }  # fmt: skip


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", nargs="*")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--scale", type=int, default=20)
    args = parser.parse_args()
    if args.repeat < 1 or args.scale < 1:
        raise SystemExit("--repeat and --scale must be at least 1")
    files = _files(args.files)
    if not files:
        raise SystemExit(f"no *.xplane.pb under {DATA}; pass files as arguments")
    rows = [bench(path, args.repeat, args.scale) for path in files]
    for row in rows:
        print(
            f"{Path(row['file']).parents[3].name or row['file']}: {row['bytes'] / 1e6:.2f} MB, "
            f"{row['events']} events; pure {row['pure_ms']:.1f} ms, native "
            f"{row['native_ms']:.2f} ms ({row['speedup']:.0f}x); peak above baseline for "
            f"{row['scale']} copies: native {row['peak_x_input']['native']:.2f}x, "
            f"pure {row['peak_x_input']['pure']:.2f}x the input"
        )
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
