"""Build script: the project is configured in setup.cfg and pyproject.toml; this file
only declares the optional C extensions of ``tfprof_lite._native`` (the step,
saved-profile and graph/op-log decoders).

The extension is optional: when it cannot be compiled (no compiler, no Python
headers) the build prints one warning and goes on, and tfprof_lite uses its
pure-Python decoder instead (docs/native.md). ``pip install -e .`` builds it in
place, next to its source.
"""

from __future__ import annotations

import sys

from setuptools import Extension, setup  # type: ignore[import-untyped, unused-ignore]
from setuptools.command.build_ext import (  # type: ignore[import-untyped, unused-ignore]
    build_ext,
)

NATIVE = "tfprof_lite._native"
#: The optional extensions: (module name, C source).
MODULES = (
    ("tfprof_lite._native._stepdecode", "tfprof_lite/_native/_stepdecode.c"),
    ("tfprof_lite._native._profiledecode", "tfprof_lite/_native/_profiledecode.c"),
    ("tfprof_lite._native._graphdecode", "tfprof_lite/_native/_graphdecode.c"),
)


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
            f"WARNING: an optional native decoder ({NATIVE}) was not built ({err}); "
            "tfprof_lite uses its pure-Python decoder instead.",
            file=sys.stderr,
        )


setup(
    ext_modules=[
        Extension(
            name,
            sources=[source],
            depends=["tfprof_lite/_native/_wire.h"],
            define_macros=[("Py_LIMITED_API", "0x03090000")],
            py_limited_api=True,
            optional=True,
        )
        for name, source in MODULES
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
