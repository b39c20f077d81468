"""What a capture says when it saw no graph-mode ``Session.run``.

Contract: :func:`no_run_note` is the one line a ``ProfileContext`` (and so
``python -m tfprof_lite.run``) logs as a warning on the ``tfprof_lite`` logger
when it is left having seen no ``Session.run`` (nor session callable) at all.
When TensorFlow executes eagerly (TF2's default) it says that the program ran
eagerly, that TF1-style capture needs a graph-mode session, and what to use
instead: TensorFlow's own profiler, whose XSpace ``tfprof-lite`` opens. Otherwise
(graph mode, no run) it says only that no run was seen. Imports TensorFlow only
to ask whether it executes eagerly (a failure counts as eager, TF2's default).
"""

from __future__ import annotations

__all__ = ["EAGER_NOTE", "IDLE_NOTE", "executing_eagerly", "no_run_note"]

#: The line for a program that ran eagerly (TF2's default) and never ran a session.
EAGER_NOTE = (
    "tfprof_lite: no profile: the program ran eagerly (no graph-mode Session.run was "
    "seen); TF1-style capture needs a graph-mode session (tf.compat.v1.Session, or "
    "tf.compat.v1.disable_eager_execution() at program start). For eager code use "
    "TensorFlow's profiler: tf.profiler.experimental.start(LOGDIR) ... stop() writes "
    "LOGDIR/plugins/profile/<run>/<host>.xplane.pb (Keras' TensorBoard(log_dir=D, "
    "profile_batch=...) writes it under D/train); then open it with "
    "`tfprof-lite overview LOGDIR`."
)

#: The line for a graph-mode program that ran no session while profiling was on.
IDLE_NOTE = "tfprof_lite: no profile: no Session.run was seen while profiling was active."


def executing_eagerly() -> bool:
    """Whether TensorFlow executes eagerly here (True when that cannot be asked)."""
    try:
        from tensorflow.python.eager import context

        return bool(context.executing_eagerly())
    except Exception:  # noqa: BLE001 - a note must never fail the program
        return True


def no_run_note() -> str:
    """The one line for a capture that saw no ``Session.run`` (see the module doc)."""
    return EAGER_NOTE if executing_eagerly() else IDLE_NOTE
