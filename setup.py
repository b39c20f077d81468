"""Build script: the project is configured in setup.cfg and pyproject.toml; this file
declares the optional C extensions of ``tfprof_lite._native`` (the step,
saved-profile, graph/op-log, XSpace, HLO and memory-record decoders, the
saved-profile encoder, the scope view's tree builder) and copies
the documentation pages (``docs/**/*.md``) into the built package as
``tfprof_lite/_docs/``, which ``tfprof-lite help`` reads.

The extension is optional: when it cannot be compiled (no compiler, no Python
headers) the build prints one warning and goes on, and tfprof_lite uses its
pure-Python decoder instead (docs/native.md). ``pip install -e .`` builds it in
place, next to its source.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup  # type: ignore[import-untyped, unused-ignore]
from setuptools.command.build_ext import (  # type: ignore[import-untyped, unused-ignore]
    build_ext,
)
from setuptools.command.build_py import (  # type: ignore[import-untyped, unused-ignore]
    build_py,
)

NATIVE = "tfprof_lite._native"
#: The optional extensions: (module name, C source).
MODULES = (
    ("tfprof_lite._native._stepdecode", "tfprof_lite/_native/_stepdecode.c"),
    ("tfprof_lite._native._profiledecode", "tfprof_lite/_native/_profiledecode.c"),
    ("tfprof_lite._native._profileencode", "tfprof_lite/_native/_profileencode.c"),
    ("tfprof_lite._native._graphdecode", "tfprof_lite/_native/_graphdecode.c"),
    ("tfprof_lite._native._scopetree", "tfprof_lite/_native/_scopetree.c"),
    ("tfprof_lite._native._xplanedecode", "tfprof_lite/_native/_xplanedecode.c"),
    ("tfprof_lite._native._hlodecode", "tfprof_lite/_native/_hlodecode.c"),
    ("tfprof_lite._native._memdecode", "tfprof_lite/_native/_memdecode.c"),
)
DOCS = Path(__file__).resolve().parent / "docs"


class BuildPyWithDocs(build_py):  # type: ignore[misc, unused-ignore]
    """``build_py`` that also copies ``docs/**/*.md`` to ``tfprof_lite/_docs/``."""

    def run(self) -> None:
        """Build the Python modules, then copy the documentation pages next to them."""
        super().run()
        if not DOCS.is_dir():  # building from an sdist made without docs/
            raise SystemExit("docs/ is missing: the package must ship its documentation")
        target = Path(self.build_lib) / "tfprof_lite" / "_docs"
        if target.exists():
            shutil.rmtree(target)
        for page in sorted(DOCS.rglob("*.md")):
            out = target / page.relative_to(DOCS)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(page, out)


class OptionalBuildExt(build_ext):  # type: ignore[misc, unused-ignore]
    """``build_ext`` that skips an extension it cannot build, with one warning."""

    def run(self) -> None:
        """Build every extension; a missing compiler is only a warning."""
        try:
            super().run()
        except Exception as err:  # e.g. distutils' PlatformError: no compiler at all
            self._warn(err)

    def build_extension(self, ext: Extension) -> None:
        """Build ``ext``; a compiler or linker failure is only a warning."""
        try:
            super().build_extension(ext)
        except Exception as err:  # CompileError, LinkError, missing headers...
            self._warn(err)

    @staticmethod
    def _warn(err: BaseException) -> None:
        print(
            f"WARNING: an optional native codec ({NATIVE}) was not built ({err}); "
            "tfprof_lite uses its pure-Python decoder instead.",
            file=sys.stderr,
        )


setup(
    ext_modules=[
        Extension(
            name,
            sources=[source],
            depends=[
                "tfprof_lite/_native/_wire.h",
                "tfprof_lite/_native/_decoder.h",
                "tfprof_lite/_native/_tuples.h",
                "tfprof_lite/_native/_msgshare.h",
                "tfprof_lite/_native/_msgtable.h",
                "tfprof_lite/_native/_hlotables.h",
            ],
            define_macros=[("Py_LIMITED_API", "0x03090000")],
            py_limited_api=True,
            optional=True,
        )
        for name, source in MODULES
    ],
    cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPyWithDocs},
)
