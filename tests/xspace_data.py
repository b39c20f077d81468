"""Where the real JAX XSpace captures are: ``shared/data/xspace`` beside the checkout.

CI clones the repository into a folder with a copy of ``shared/`` beside it, so the
captures are ``<checkout>/../shared/data/xspace``; in a git worktree the main
checkout's neighbour counts too, and ``TFPROF_LITE_SHARED_DATA`` (naming
``shared/data``) overrides both. A test that needs them skips where they are
missing, and fails under ``CI=true`` (:func:`tests.stepcols.skip_or_fail`).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.stepcols import skip_or_fail

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The JAX capture folders (an MLP and a bf16 transformer on one H100).
JAX_CASES = ("jax_h100_mlp", "jax_h100_transformer_bf16")


def _checkouts() -> list[Path]:
    """This checkout, and the main one when this is a git worktree (``.git`` is a file)."""
    found = [REPO_ROOT]
    marker = REPO_ROOT / ".git"
    if marker.is_file():
        text = marker.read_text().strip()
        if text.startswith("gitdir:"):
            gitdir = Path(text.split(":", 1)[1].strip())
            if gitdir.parent.name == "worktrees":
                found.append(gitdir.parents[2])
    return found


def shared_xspace_dir() -> Path:
    """``shared/data/xspace`` beside the checkout (``TFPROF_LITE_SHARED_DATA`` overrides)."""
    configured = os.environ.get("TFPROF_LITE_SHARED_DATA")
    if configured:
        return Path(configured) / "xspace"
    candidates = [root.parent / "shared" / "data" / "xspace" for root in _checkouts()]
    return next((c for c in candidates if c.is_dir()), candidates[0])


def data_dir() -> Path:
    """The folder holding the JAX captures; skips (fails under CI) when they are absent."""
    root = shared_xspace_dir()
    if not (root / JAX_CASES[0]).is_dir():
        skip_or_fail(f"the JAX XSpace captures are missing ({root}: shared/data/xspace)")
    return root


def jax_file(case: str) -> Path:
    """The one ``*.xplane.pb`` of JAX capture ``case``."""
    found = sorted((data_dir() / case).glob("plugins/profile/*/*.xplane.pb"))
    if len(found) != 1:
        skip_or_fail(f"the JAX capture {data_dir() / case} has {len(found)} XSpace files, not 1")
    return found[0]
