"""XProf's memory viewer as a second opinion on :mod:`tfprof_lite.programs.buffers`.

:func:`xprof_memory` runs XProf's ``memory_viewer`` tool on programs of an
XSpace and returns, per program, what it says in bytes (:class:`XprofMemory`).
XProf reads a program's memory from a ``<module>(<program id>).hlo_proto.pb``
file beside the XSpace, which its tool-name listing
(``xspace_to_tool_names``) extracts from the XSpace first; asked without those
files it answers nothing. So the child process works on a temporary copy of the
XSpace, lists the tools once, then converts each program, named as XProf names
it (``jit_train_step(84048)``).

The child is the interpreter :func:`tests.xspace_oracle.require_xprof` finds
(skipping the test without XProf, failing it under ``CI=true``); run as a script
(``python tests/xprof_memory_viewer.py XSPACE OUT NAME...``) this file is that
child: it imports nothing but the standard library and ``xprof``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Bytes in a MiB (XProf reports sizes in MiB, as doubles).
MIB = 1 << 20


@dataclasses.dataclass(frozen=True)
class XprofMemory:
    """XProf's numbers for one program, in bytes (rounded from its MiB doubles).

    ``peak_position`` is the index of the heap event that reached the peak;
    ``heap`` the bytes before each event and after the last one.
    """

    peak_bytes: int
    total_bytes: int
    indefinite_bytes: int
    peak_position: int
    heap: tuple[int, ...]
    raw: dict[str, Any]


def _bytes(mib: float) -> int:
    return round(float(mib) * MIB)


def parse(data: dict[str, Any]) -> XprofMemory:
    """The memory viewer's JSON (a ``PreprocessResult``) in bytes."""
    return XprofMemory(
        peak_bytes=_bytes(data.get("peakHeapMib", 0.0)),
        total_bytes=_bytes(data.get("totalBufferAllocationMib", 0.0)),
        indefinite_bytes=_bytes(data.get("indefiniteBufferAllocationMib", 0.0)),
        peak_position=int(data.get("peakHeapSizePosition", 0)),
        heap=tuple(_bytes(h) for h in data.get("heapSizes", [])),
        raw=data,
    )


def xprof_memory(xspace: Path, names: list[str]) -> dict[str, XprofMemory]:
    """XProf's memory viewer for each of ``names`` (``module(program_id)``) in ``xspace``."""
    from tests.xspace_oracle import require_xprof

    python = require_xprof()
    with tempfile.TemporaryDirectory(prefix="xprof_memory_") as tmp:
        copy = Path(tmp) / "run" / xspace.name
        copy.parent.mkdir()
        shutil.copyfile(xspace, copy)
        out = Path(tmp) / "out.json"
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONNOUSERSITE="1")
        done = subprocess.run(
            [python, __file__, str(copy), str(out), *names],
            capture_output=True, text=True, timeout=600, env=env,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"XProf memory_viewer failed on {xspace}:\n{done.stderr[-3000:]}")
        found = json.loads(out.read_text())
    return {name: parse(data) for name, data in found.items()}


def _child_main(argv: list[str]) -> int:
    """Extract the programs, convert each one named; write ``{name: json}`` to OUT."""
    path, out, *names = argv
    from xprof.convert import raw_to_tool_data  # type: ignore[import-untyped]

    raw_to_tool_data.xspace_to_tool_names([path])
    found: dict[str, Any] = {}
    for name in names:
        program_id = name.rsplit("(", 1)[1].rstrip(")")
        params = {"use_saved_result": False, "module_name": name, "program_id": program_id}
        data, _ = raw_to_tool_data.xspace_to_tool_data([path], "memory_viewer", params)
        if data is None:
            print(f"XProf's memory viewer returned nothing for {name}", file=sys.stderr)
            return 1
        found[name] = json.loads(data)
    Path(out).write_text(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
