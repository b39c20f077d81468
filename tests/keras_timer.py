"""A Keras callback that times each training batch with the loop's own clock.

:func:`batch_timer` returns a ``keras.callbacks.Callback`` that appends to
``seconds`` the ``time.perf_counter()`` time of each batch, from the end of the
previous one (the first from the start of training): the truth the captures'
step times are checked against. Used by the child scripts that profile Keras
``fit`` (``tests/input_capture.py``, ``tests/integration/step_captures.py``);
imports Keras only when called.
"""

from __future__ import annotations

import time
from typing import Any


def batch_timer(seconds: list[float]) -> Any:
    """A callback filling ``seconds`` (see the module docstring)."""
    import keras

    class Timer(keras.callbacks.Callback):  # type: ignore[misc]
        """Each batch from the end of the previous one."""

        def on_train_begin(self, logs: Any = None) -> None:
            self.last = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            now = time.perf_counter()
            seconds.append(now - self.last)
            self.last = now

    return Timer()
