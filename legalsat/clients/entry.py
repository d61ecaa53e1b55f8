"""The `legalsat` script's entry point.

It imports nothing but the standard library before its guard: Ctrl-C at any moment, even while
the command line's modules load (pydantic, the settings: about 0.1 s), ends the command with
status 130 and one line on stderr, as it does once a command runs, not with a traceback."""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130  # the shell's code for a process ended by SIGINT


def main() -> int:
    try:
        from legalsat.clients.cli import main as run

        return run()
    except KeyboardInterrupt:
        print("legalsat: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
