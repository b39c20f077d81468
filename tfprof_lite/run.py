"""``python -m tfprof_lite.run (script.py | -m module) [args...]``.

Runs a program unchanged inside a ``ProfileContext`` configured by the
``TFPROF_LITE_*`` environment variables (see :mod:`tfprof_lite.session.autostart`
and docs/capture.md), e.g.::

    TFPROF_LITE_DIR=/tmp/prof TFPROF_LITE_TRACE_STEPS=5-10 python -m tfprof_lite.run train.py
"""

from __future__ import annotations

import sys

from tfprof_lite.session.autostart import main

if __name__ == "__main__":
    sys.exit(main())
