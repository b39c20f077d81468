"""What wrote a profile: a TF1 graph run, TensorFlow 2 (Keras) or JAX.

Contract of :func:`profile_kind`:

* ``"tf1"``: the profile was not read from an XSpace (``model.steps_source`` is
  empty): a GraphDef with RunMetadata, or a saved ProfileProto. Graph-only
  numbers (parameters, FLOPs, op logs) can be there.
* ``"jax"``: an XSpace whose XLA programs are JAX's (a module named
  ``jit_<function>``, ``pmap_<function>`` or ``xmap_<function>``), or whose nodes
  carry JAX scopes (``jit(f)/...``).
* ``"tf2"``: any other XSpace (TensorFlow 2 eager, ``tf.function`` or Keras,
  with or without XLA).

XSpace profiles never record parameters, FLOPs or op logs; :func:`has_graph_stats`
says whether a profile can have them.
"""

from __future__ import annotations

from tfprof_lite.model.profile import ProfileModel

__all__ = ["JAX_MODULE_PREFIXES", "has_graph_stats", "is_xspace", "profile_kind"]

#: The module names JAX gives its XLA programs (``jit_train_step``).
JAX_MODULE_PREFIXES = ("jit_", "pmap_", "xmap_")
_JAX_SCOPES = ("jit(", "pjit(", "pmap(", "xmap(")


def is_xspace(model: ProfileModel) -> bool:
    """True when ``model`` was read from an XSpace (TF2, Keras or JAX)."""
    return bool(model.steps_source)


def _jax_programs(model: ProfileModel) -> bool:
    programs = getattr(model.xla_programs, "programs", None) or ()
    return any(str(getattr(p, "module", "")).startswith(JAX_MODULE_PREFIXES) for p in programs)


def profile_kind(model: ProfileModel) -> str:
    """``"tf1"``, ``"tf2"`` or ``"jax"`` (see the module docstring)."""
    if not is_xspace(model):
        return "tf1"
    if _jax_programs(model) or any(name.startswith(_JAX_SCOPES) for name in model.names):
        return "jax"
    return "tf2"


def has_graph_stats(model: ProfileModel) -> bool:
    """Whether the profile can record parameters and FLOPs (a TF1 graph can;
    an XSpace records neither)."""
    return not is_xspace(model)
