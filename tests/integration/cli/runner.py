"""Running the CLI in-process: success through click's runner, failure as the entry point."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result

from tfprof_lite.cli import cli, main


def invoke(*args: object) -> Result:
    """Runs ``tfprof-lite ARGS`` with click's runner; asserts exit code 0."""
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def fails(capsys: pytest.CaptureFixture[str], *args: object) -> str:
    """Runs the CLI as the entry point does; asserts one error line and exit 1."""
    capsys.readouterr()
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith("tfprof-lite: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err
