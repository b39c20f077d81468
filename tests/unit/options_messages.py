"""Expected TF 2.21 messages of the option checks, shared by ``test_options.py`` and
``test_options_syntax.py``."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tfprof_lite.errors import InvalidOptionError

UNKNOWN_TYPE = (
    "E.g. Unknown output type: {}, Valid types: collapsed,csv,file,json,none,pprof,stdout,timeline"
)
VISUALIZE = "Visualize format: -output timeline:key=value,key=value,..."
DUMP_NOTE = (
    "-dump_to_file option is deprecated. Please use -output file:outfile=<filename>\n"
    "-output {} is overwritten with -output file:outfile={}\n"
)


def _raises(message: str) -> Any:
    """pytest.raises for an InvalidOptionError whose text is exactly ``message``."""
    return pytest.raises(InvalidOptionError, match=f"^{re.escape(message)}$")
