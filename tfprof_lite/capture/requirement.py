"""The TensorFlow that capturing needs: any TensorFlow 2.x from 2.15 on.

tfprof_lite does not install TensorFlow for you in a way that could clash with
the one you have (``tensorflow``, ``tensorflow-cpu``, a GPU or vendor build): the
capture side works with whichever TensorFlow distribution is installed, as long
as it is 2.15 or newer (2.15 is the last release with ``tf.estimator``).
:func:`require_tensorflow` is called where capturing starts (a profiled
``Session``, :class:`~tfprof_lite.ProfilerHook`, an op log built from a
``tf.Graph``) and turns a missing or too old TensorFlow into one
:class:`~tfprof_lite.errors.MissingDependencyError` line instead of an import
traceback deep inside TensorFlow. Reading saved profiles never calls it.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType

from tfprof_lite.errors import MissingDependencyError

__all__ = ["MIN_TENSORFLOW", "parse_version", "require_tensorflow"]

#: The oldest TensorFlow the capture side supports.
MIN_TENSORFLOW = (2, 15)

_INSTALL = (
    "install TensorFlow 2.15 or newer (pip install 'tensorflow>=2.15', or the "
    "tensorflow-cpu / GPU build you use)"
)
_checked: ModuleType | None = None


def parse_version(text: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version string such as ``2.21.0`` or ``2.16.0rc1``."""
    match = re.match(r"\s*(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _version(tf: ModuleType) -> str:
    """TensorFlow's version string, also while ``import tensorflow`` is still running
    (a ``ProfileContext`` entered from ``python -m tfprof_lite.run`` starts then,
    before the package has set ``__version__``)."""
    version = getattr(tf, "__version__", None)
    if version is None:
        try:
            version = importlib.import_module("tensorflow.python.framework.versions").__version__
        except (ImportError, AttributeError):
            version = None
    return str(version) if version is not None else "unknown"


def require_tensorflow(feature: str) -> ModuleType:
    """The ``tensorflow`` module, once checked to be 2.15 or newer.

    Raises:
        MissingDependencyError: TensorFlow cannot be imported, or is older than
            2.15 (or not 2.x); the message names ``feature`` and what to install.
    """
    global _checked
    if _checked is not None:
        return _checked
    try:
        tf = importlib.import_module("tensorflow")
    except ImportError as err:
        raise MissingDependencyError(
            f"{feature} needs TensorFlow, which cannot be imported ({err}); {_INSTALL}"
        ) from None
    version = _version(tf)
    parsed = parse_version(version)
    if parsed is None or parsed < MIN_TENSORFLOW or parsed[0] != MIN_TENSORFLOW[0]:
        raise MissingDependencyError(
            f"{feature} needs TensorFlow 2.x from 2.15 on; this is TensorFlow {version}; {_INSTALL}"
        )
    _checked = tf
    return tf
