"""The native decoder built with AddressSanitizer and UndefinedBehaviorSanitizer.

``_stepdecode.c`` is compiled with ``gcc -fsanitize=address,undefined`` into a
temporary directory and imported by a child Python (``LD_PRELOAD`` of gcc's
``libasan.so``; the child imports nothing but that module) that decodes the
fuzz slice of the ``native`` target, the fuzz seeds, every truncation of one seed
and the hand-made inputs of :mod:`tests.native_cases`. Any sanitizer report, crash
or non-zero exit fails the test; the child's results must also equal the regular
build's. A second build with a 64-byte input limit reaches the size check, and
planted bugs (an out-of-bounds read, a signed overflow) prove the check fails.

Skipped when gcc, its sanitizer runtimes or the Python headers are missing; under
``CI=true`` that is an error.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.cases import Corpus, make_case
from tests.fuzz.native import native_seeds
from tests.native_cases import all_inputs
from tests.stepcols import skip_or_fail
from tfprof_lite.proto import steps

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tfprof_lite" / "_native" / "_stepdecode.c"
#: Inputs of the native fuzz target fed to the sanitized build (its own seed).
FUZZ_INPUTS = 2000
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
FLAGS = [*SANITIZE, "-fno-omit-frame-pointer", "-g", "-O1", "-shared", "-fPIC"]
REPORT_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "SUMMARY: ", "Sanitizer")

#: The child: decodes every input of a length-prefixed file and prints one digest
#: per input (``-`` when declined), twice over so results are freed and rebuilt.
CHILD = textwrap.dedent(
    """
    import gc, hashlib, importlib, struct, sys
    sys.path.insert(0, sys.argv[1])
    decode = importlib.import_module(sys.argv[2]).decode
    data = open(sys.argv[3], "rb").read()
    pos, out = 0, []
    while pos < len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        item = data[pos + 8 : pos + 8 + size]
        pos += 8 + size
        for _ in range(2):
            result = decode(item)
        if result is None:
            out.append("-")
        else:
            parts = [bytes(p) if isinstance(p, bytearray) else p for p in result]
            out.append(hashlib.sha256(repr(parts).encode()).hexdigest())
        del result
    gc.collect()
    sys.stdout.write("\\n".join(out) + "\\n")
    """
)


def _tool(name: str) -> str:
    found = subprocess.run(
        ["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not os.path.isabs(found) or not os.path.exists(found):
        skip_or_fail(f"gcc's {name} is missing (install gcc's sanitizer runtimes)")
    return found


@pytest.fixture(scope="module")
def libasan() -> str:
    """Path of gcc's ASan runtime (skips, or fails under CI, without gcc or it)."""
    if shutil.which("gcc") is None:
        skip_or_fail("gcc is not installed (needed for the sanitizer build)")
    _tool("libubsan.so")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        skip_or_fail(f"the Python headers are missing ({include})")
    return _tool("libasan.so")


def build(out_dir: Path, source: Path, name: str, *defines: str) -> Path:
    """Compile ``source`` with the sanitizers into module ``name`` in ``out_dir``."""
    target = out_dir / f"{name}.so"
    include = sysconfig.get_paths()["include"]
    command = ["gcc", *FLAGS, *defines, f"-I{include}", str(source), "-o", str(target)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return target


def run_child(libasan: str, module: Path, inputs: list[bytes]) -> subprocess.CompletedProcess[str]:
    """Run the child on ``inputs`` with the sanitizer runtime preloaded."""
    data_file = module.parent / f"{module.stem}.inputs"
    data_file.write_bytes(b"".join(struct.pack("<Q", len(d)) + d for d in inputs))
    env = {
        **os.environ,
        "LD_PRELOAD": libasan,
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=86",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=87",
    }
    env.pop("PYTHONPATH", None)
    argv = [sys.executable, "-I", "-c", CHILD, str(module.parent), module.stem, str(data_file)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)


def problems(done: subprocess.CompletedProcess[str]) -> list[str]:
    """What went wrong in a child run: exit status and sanitizer report lines."""
    found = [f"exit status {done.returncode}"] if done.returncode != 0 else []
    found += [line for line in done.stderr.splitlines() if any(m in line for m in REPORT_MARKS)]
    return found


def _digest(result: Any) -> str:
    if result is None:
        return "-"
    parts = [bytes(p) if isinstance(p, bytearray) else p for p in result]
    return hashlib.sha256(repr(parts).encode()).hexdigest()


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    """The fuzz seed corpus."""
    return Corpus()


def _inputs(corpus: Corpus) -> list[bytes]:
    seeds = native_seeds(corpus)
    cases = [make_case(corpus, "native", i, 4242).files["run_meta"] for i in range(FUZZ_INPUTS)]
    cuts = [seeds[-1][:n] for n in range(len(seeds[-1]))]
    return [*all_inputs().values(), *seeds, *cases, *cuts]


def test_sanitized_build_is_clean(libasan: str, tmp_path: Path, corpus: Corpus) -> None:
    module = build(tmp_path, SOURCE, "_stepdecode")
    inputs = _inputs(corpus)
    done = run_child(libasan, module, inputs)
    assert problems(done) == [], done.stderr[-4000:]
    digests = done.stdout.split()
    assert len(digests) == len(inputs)
    assert 0 < digests.count("-") < len(inputs)  # both decoded and declined inputs
    native = steps._native()
    if native is not None:  # the regular build gives the same results
        assert digests == [_digest(native.decode(d)) for d in inputs]


def test_input_limit(libasan: str, tmp_path: Path) -> None:
    """Built with a 64-byte limit: 63 bytes are decoded, 64 declined (the 2 GiB
    check of the real build, without a 2 GiB input)."""
    module = build(tmp_path, SOURCE, "_stepdecode", "-DSTEPDECODE_LIMIT=64")
    sized = [_meta_of_size(n) for n in (63, 64, 65)]
    assert [len(d) for d in sized] == [63, 64, 65]
    done = run_child(libasan, module, sized)
    assert problems(done) == [], done.stderr[-4000:]
    assert done.stdout.split()[1:] == ["-", "-"] and done.stdout.split()[0] != "-"
    native = steps._native()
    if native is not None:  # the regular build decodes all three
        assert all(native.decode(d) is not None for d in sized)


def _meta_of_size(size: int) -> bytes:
    """RunMetadata{step_stats{dev_stats{device: "x" * (size - 6)}}} (``size`` < 128)."""
    device = b"\x0a" + bytes([size - 6]) + b"x" * (size - 6)
    return b"\x0a" + bytes([len(device) + 2]) + b"\x0a" + bytes([len(device)]) + device


PLANTED = textwrap.dedent(
    """
    #define PY_SSIZE_T_CLEAN
    #include <Python.h>
    #include <limits.h>
    #include <stdlib.h>
    static PyObject *decode(PyObject *m, PyObject *arg) {
        volatile int big = INT_MAX;
        char *buf;
        int value;
        (void)m;
        if (PyBytes_Size(arg) == 1) {  /* a signed overflow */
            value = big + (int)PyBytes_Size(arg);
            return PyLong_FromLong(value);
        }
        buf = calloc(4 + (size_t)PyBytes_Size(arg), 1);  /* an out-of-bounds read */
        value = buf[4 + PyBytes_Size(arg)];
        free(buf);
        return PyLong_FromLong(value);
    }
    static PyMethodDef methods[] = {{"decode", decode, METH_O, ""}, {NULL, NULL, 0, NULL}};
    static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "planted", "", -1, methods};
    PyMODINIT_FUNC PyInit_planted(void) { return PyModule_Create(&def); }
    """
)


@pytest.mark.parametrize(("data", "report"), [(b"", "AddressSanitizer"), (b"x", "runtime error")])
def test_planted_bugs_are_reported(libasan: str, tmp_path: Path, data: bytes, report: str) -> None:
    source = tmp_path / "planted.c"
    source.write_text(PLANTED)
    done = run_child(libasan, build(tmp_path, source, "planted"), [data])
    found = problems(done)
    assert found and any(report in line for line in found), done.stderr[-2000:]
