"""Lazy imports: ``import tfprof_lite`` and ``tfprof-lite --help`` load almost nothing,
and a command loads only what it uses (``overview``/``report`` on an XSpace).

Each check runs a fresh interpreter (``sys.modules`` of this test process is already
full). Start-up timings are measured by ``benchmarks/bench_cli.py``, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

import tfprof_lite
from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.cli import _REGISTRY, COMMANDS, cli

#: Packages that neither ``import tfprof_lite`` nor ``--help`` may load.
HEAVY = ("session", "capture", "analysis", "advisor", "report", "xla")
#: Third-party modules neither may load.
THIRD_PARTY = ("tensorflow", "numpy", "google.protobuf", "re2")

_REPORT = (
    "import json, sys; print(json.dumps(sorted(m for m in sys.modules "
    "if m.startswith(('tfprof_lite',) + {third!r}))))"
)


def _loaded(code: str) -> list[str]:
    """Modules (ours and :data:`THIRD_PARTY`) loaded after running ``code``."""
    script = f"{code}\n{_REPORT.format(third=THIRD_PARTY)}"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    modules: list[str] = json.loads(out.splitlines()[-1])
    return modules


def _assert_light(modules: list[str]) -> None:
    heavy = [m for m in modules if m.split(".")[1:2] and m.split(".")[1] in HEAVY]
    assert heavy == []
    assert [m for m in modules if m.split(".")[0] in ("tensorflow", "numpy", "re2")] == []
    assert [m for m in modules if m.startswith("google.protobuf")] == []


def test_import_loads_only_the_package() -> None:
    modules = _loaded("import tfprof_lite")
    _assert_light(modules)
    assert modules == ["tfprof_lite"]


def test_help_loads_no_command_module() -> None:
    # ``python -m tfprof_lite --help``, in-process so that sys.modules can be read.
    code = (
        "import runpy, sys\n"
        "sys.argv = ['tfprof_lite', '--help']\n"
        "try:\n"
        "    runpy.run_module('tfprof_lite', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0\n"
    )
    modules = _loaded(code)
    _assert_light(modules)
    assert [m for m in modules if m.startswith("tfprof_lite.cli.")] == []


def test_help_lists_every_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tfprof_lite", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0
    listed = result.stdout.split("Commands:", 1)[1]
    for name, (_, _, short) in _REGISTRY.items():
        assert f"  {name} " in listed
        assert short in listed


def test_registry_help_matches_each_command() -> None:
    """The help texts kept in the registry are the commands' own short help."""
    for name, (_, _, short) in _REGISTRY.items():
        assert COMMANDS[name].get_short_help_str(limit=200) == short


def test_registry_lists_each_command_once() -> None:
    assert sorted(_REGISTRY) == cli.list_commands(click.Context(cli))
    assert cli.get_command(click.Context(cli), "no-such-command") is None
    with pytest.raises(KeyError):
        COMMANDS["no-such-command"]


def test_a_command_loads_only_its_own_family() -> None:
    modules = _loaded(
        "from tfprof_lite.cli import COMMANDS, cli\n"
        "import click\n"
        "cli.get_command(click.Context(cli), 'overview')\n"
    )
    commands = {m for m in modules if m.startswith("tfprof_lite.cli.")}
    assert "tfprof_lite.cli.overview" in commands
    assert not commands & {"tfprof_lite.cli.views", "tfprof_lite.cli.report", "tfprof_lite.cli.hlo"}


@pytest.mark.parametrize("name", [n for n in tfprof_lite.__all__ if n != "ProfilerHook"])
def test_public_names_resolve(name: str) -> None:
    assert getattr(tfprof_lite, name) is not None
    assert name in dir(tfprof_lite)


def test_profiler_hook_resolves_lazily() -> None:
    """``ProfilerHook`` is a TensorFlow hook: resolving it imports TensorFlow (skipped
    without it); merely importing the package does not."""
    pytest.importorskip("tensorflow")
    assert tfprof_lite.ProfilerHook.__name__ == "ProfilerHook"


def test_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError):
        tfprof_lite.no_such_name  # noqa: B018
    assert not hasattr(tfprof_lite, "no_such_name")


def test_names_match_their_modules() -> None:
    from tfprof_lite.errors import UsageError
    from tfprof_lite.profiler import Profiler

    assert tfprof_lite.Profiler is Profiler
    assert tfprof_lite.UsageError is UsageError


def test_loading_an_xspace_leaves_numpy_ma_out(tmp_path: Path) -> None:
    """``numpy.ma`` (some 20 ms to import) is not needed to read an XSpace: a bare
    ``np.unique(x)`` imports it on its first call."""
    from tests.unit.test_xspace_model import _tf_space

    path = tmp_path / "host.xplane.pb"
    path.write_bytes(_tf_space().bytes())
    modules = _loaded(
        f"from tfprof_lite import Profiler\nassert Profiler.load({str(path)!r}).model.steps"
    )
    assert "tfprof_lite.formats.xspace.read.conversion" in modules
    assert "numpy.ma" not in modules


#: What a command on an XSpace never needs: the query stack (views, outputs,
#: option parsing and RE2), the advisor, the report, TensorFlow's layers and the
#: cluster model and analysis (a single host's profile).
_NOT_FOR_AN_XSPACE_OVERVIEW = (
    "re2",
    "tfprof_lite.advisor",
    "tfprof_lite.analysis.cluster",
    "tfprof_lite.capture",
    "tfprof_lite.model.cluster",
    "tfprof_lite.model.cluster_merge",
    "tfprof_lite.options.options",
    "tfprof_lite.outputs",
    "tfprof_lite.report",
    "tfprof_lite.session",
    "tfprof_lite.views",
)


def _command_modules(args: list[str]) -> set[str]:
    """Modules a ``tfprof-lite`` command imports beyond the interpreter's start-up
    (run in a fresh interpreter; the command must succeed)."""
    script = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "from tfprof_lite.cli import main\n"
        f"code = main({args!r})\n"
        "sys.stdout.flush()\n"
        "print('\\n' + json.dumps([code, sorted(set(sys.modules) - before)]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    code, modules = json.loads(out.splitlines()[-1])
    assert code == 0
    return set(modules)


def _under(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_overview_of_an_xspace_loads_only_what_it_uses() -> None:
    modules = _command_modules(["overview", str(jax_file(JAX_CASES[0]))])
    assert "tfprof_lite.analysis.overview" in modules  # the command did run
    assert _under(modules, _NOT_FOR_AN_XSPACE_OVERVIEW) == []


@pytest.mark.parametrize("command", ["overview", "report"])
@pytest.mark.parametrize("case", ["jax_h100_mlp", "jax_h100_transformer_bf16"])
def test_overview_and_report_of_an_xspace_load_no_protobuf(
    case: str, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native decoders read the XSpace, its HLO programs and the memory
    records: protobuf (some 20 ms to import with our message classes) is left
    out, and the report's advisor section builds no AdviceProto."""
    from tfprof_lite._native import PURE_PYTHON_ENV, load

    monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    if any(load(name) is None for name in ("_xplanedecode", "_hlodecode", "_memdecode")):
        pytest.skip("the native XSpace, HLO and memory decoders are not built")
    extra = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    modules = _command_modules([command, str(jax_file(case)), *extra])
    assert "tfprof_lite.model.xla_ops" in modules  # the HLO programs were read
    if command == "report":
        assert "tfprof_lite.advisor.runner" in modules and "tfprof_lite.analysis.memory" in modules
    assert _under(modules, ("google.protobuf", "tfprof_lite.proto.messages")) == []


def test_report_of_an_xspace_loads_no_cluster_code_nor_package_metadata(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    modules = _command_modules(["report", str(jax_file(JAX_CASES[0])), "-o", str(out)])
    assert out.stat().st_size > 0
    # The footer's version is the package's own (no distribution metadata read),
    # and a single host's report needs no cluster analysis.
    assert _under(modules, ("importlib.metadata", "tfprof_lite.analysis.cluster")) == []
    assert _under(modules, ("tfprof_lite.model.cluster", "tfprof_lite.model.cluster_merge")) == []
    # An XSpace carries no XLA compatibility data: its checker says so without
    # importing the analysis (and its op patterns).
    assert "tfprof_lite.advisor.xla_compat" in modules
    assert "XlaCompatibilityChecker" in out.read_text()
    assert (
        _under(modules, ("tfprof_lite.analysis.xla_compat", "tfprof_lite.analysis.xla_ops")) == []
    )


def test_xla_tag_prefix_starts_every_xla_tag() -> None:
    from tfprof_lite.advisor.xla_compat import TAG_PREFIX
    from tfprof_lite.analysis import xla_ops

    tags = [xla_ops.TAG_COMPATIBLE, xla_ops.TAG_INCOMPATIBLE, xla_ops.TAG_REASON, xla_ops.TAG_HOST]
    assert all(tag.startswith(TAG_PREFIX) for tag in tags)


def test_the_package_version_is_the_distributions() -> None:
    """The report's footer prints ``__version__``: it is the installed version."""
    from importlib import metadata

    try:
        installed = metadata.version("tfprof-lite")
    except metadata.PackageNotFoundError:
        pytest.skip("tfprof-lite is not installed as a distribution")
    assert installed == tfprof_lite.__version__


def test_profiler_of_graph_bytes_loads_no_capture_code(tmp_path: Path) -> None:
    """``Profiler(graph_def, op_log)`` with TensorFlow's FLOPs reads bytes or
    messages only: none of the live-graph capture nor the corrected-FLOP code
    (some 25 ms of imports on the first call)."""
    from tests.handmade import graph_def, node

    path = tmp_path / "graph.pb"
    nodes = [node("x", "Placeholder", outputs=[[2, 3]]), node("y", "Relu", ["x"])]
    path.write_bytes(graph_def(nodes).SerializeToString())
    modules = _loaded(
        "from tfprof_lite import Profiler\n"
        f"assert Profiler(open({str(path)!r}, 'rb').read()).model.names"
    )
    assert "tfprof_lite.ingest" in modules  # the profile was built
    assert [
        m for m in modules if m.startswith(("tfprof_lite.capture", "tfprof_lite.model.flops"))
    ] == []


def test_profiler_construction_from_bytes_imports_nothing_more(tmp_path: Path) -> None:
    """The constructor on a GraphDef and an op log (checked, decoded on first
    read) imports no module once ``Profiler`` is imported, but the native
    decoder: no protobuf either (a graph of fewer than 64 nodes given as bytes
    is also parsed by protobuf, for its input-kind check, so this one is larger)."""
    from tests.handmade import graph_def, node

    nodes = [node("x", "Placeholder")] + [node(f"r{i}", "Relu", ["x"]) for i in range(80)]
    path = tmp_path / "graph.pb"
    path.write_bytes(graph_def(nodes).SerializeToString())
    modules = _loaded(
        "import sys\n"
        "from tfprof_lite import Profiler\n"
        f"data = open({str(path)!r}, 'rb').read()\n"
        "before = set(sys.modules)\n"
        "prof = Profiler(data, b'')\n"
        "new = sorted(set(sys.modules) - before)\n"
        "assert set(new) <= {'tfprof_lite._native._graphdecode'}, new\n"
        "assert prof.model.names[:2] == ['x', 'r0'] and len(prof.model.names) == 81"
    )
    assert "tfprof_lite.ingest" in modules
    assert not [m for m in modules if m.startswith("google.protobuf")]


_BLAS_AT_NUMPY_IMPORT = """
import importlib.abc, json, os, sys
seen = []
class Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "numpy":
            seen.append(os.environ.get("OPENBLAS_NUM_THREADS"))
        return None
sys.meta_path.insert(0, Hook())
from tfprof_lite.cli import main
code = main({args!r})
sys.stdout.flush()
print("\\n" + json.dumps([code, seen, os.environ.get("OPENBLAS_NUM_THREADS")]))
"""


@pytest.mark.parametrize("preset", [None, "2"])
def test_numpy_is_imported_with_one_blas_thread(
    preset: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command imports NumPy with ``OPENBLAS_NUM_THREADS=1`` (its BLAS threads
    would only spin) and then restores the environment; a value the user set
    is left alone."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    if preset is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", preset)
    script = _BLAS_AT_NUMPY_IMPORT.format(args=["overview", str(jax_file(JAX_CASES[0]))])
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    code, seen, after = json.loads(out.splitlines()[-1])
    assert code == 0
    assert seen == ["1" if preset is None else preset]
    assert after == preset


def test_commands_said_to_need_no_numpy_are_those_that_import_none() -> None:
    """NumPy is imported early (with one BLAS thread) for every command but
    those of ``_WITHOUT_NUMPY``, whose modules import none: their ``--help``
    stays light, and the others lose nothing."""
    from tfprof_lite.cli import _WITHOUT_NUMPY

    script = (
        "import sys, importlib; importlib.import_module(sys.argv[1]); print('numpy' in sys.modules)"
    )
    without = set()
    for name, (module, _, _) in _REGISTRY.items():
        out = subprocess.run(
            [sys.executable, "-c", script, f"tfprof_lite.cli.{module}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if out.strip() == "False":
            without.add(name)
    assert without == set(_WITHOUT_NUMPY)


@pytest.mark.parametrize("case", JAX_CASES)
def test_report_and_overview_of_an_xspace_leave_numpy_ma_out(case: str, tmp_path: Path) -> None:
    """The overview and the HTML report of an XSpace never import ``numpy.ma``
    (some 20 ms): a bare ``np.unique(x)`` imports it on its first call,
    ``return_index`` does not."""
    path = str(jax_file(case))
    report = _command_modules(["report", path, "-o", str(tmp_path / "r.html")])
    assert "numpy.ma" not in report
    assert (tmp_path / "r.html").stat().st_size > 0
    assert "numpy.ma" not in _command_modules(["overview", path, "--json"])
