"""The ``lfqa-rubric`` console script: refuse a shadowed package in one line, then run the command line.

Its own module, outside ``workers.cli``, so that the check runs before the CLI's imports and
nothing imports this module back.
"""

from __future__ import annotations

import sys

from workers.installed import DISTRIBUTION, ShadowedPackageError, check_installed

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """A shadowed ``rubric``/``models``/``workers`` is one line on stderr and exit status 2, before anything
    imports it (:func:`workers.installed.check_installed`); otherwise :func:`workers.cli.main`."""
    try:
        check_installed()
    except ShadowedPackageError as e:
        sys.stderr.write(f"{DISTRIBUTION}: error: {e}\n")
        return 2
    from workers.cli import main as cli_main

    return cli_main(argv)
