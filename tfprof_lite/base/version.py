"""The package's version, in one place: ``tfprof_lite.__version__``, the
distribution's version (``setup.cfg`` reads it from here) and the report's footer.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
