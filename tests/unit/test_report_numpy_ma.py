"""The overview and the HTML report of an XSpace never import ``numpy.ma`` (some
20 ms): a bare ``np.unique(x)`` imports it on its first call, ``return_index``
does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.xspace_data import JAX_CASES, jax_file


def _imports_numpy_ma(args: list[str]) -> bool:
    script = (
        "import json, sys\n"
        "from tfprof_lite.cli import main\n"
        f"code = main({args!r})\n"
        "sys.stdout.flush()\n"
        "print('\\n' + json.dumps([code, 'numpy.ma' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    code, loaded = json.loads(out.splitlines()[-1])
    assert code == 0
    return bool(loaded)


@pytest.mark.parametrize("case", JAX_CASES)
def test_report_and_overview_of_an_xspace_leave_numpy_ma_out(case: str, tmp_path: Path) -> None:
    path = str(jax_file(case))
    assert not _imports_numpy_ma(["report", path, "-o", str(tmp_path / "r.html")])
    assert (tmp_path / "r.html").stat().st_size > 0
    assert not _imports_numpy_ma(["overview", path, "--json"])
