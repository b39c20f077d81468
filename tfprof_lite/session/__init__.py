"""Runtime drivers: profiling and monitoring a running TF1-style program.

``ProfileContext`` (:mod:`~tfprof_lite.session.profile_context`), ``ProfilerHook``
(:mod:`~tfprof_lite.session.hooks`), the live ``Monitor``
(:mod:`~tfprof_lite.session.monitor`) and environment-variable activation
(:mod:`~tfprof_lite.session.autostart`, ``python -m tfprof_lite.run``). They share
one patch of ``Session.run`` (:mod:`~tfprof_lite.session.dispatch`) and the
trace/dump schedule (:mod:`~tfprof_lite.session.schedule`). Importing this
package does not import TensorFlow; entering a context or a monitor does.
"""
