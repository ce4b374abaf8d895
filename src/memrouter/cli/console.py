"""The ``memrouter`` console script.

A plain ``memrouter search ...`` command line runs on the fast path
(``memrouter.cli.fast_search``: no click, nothing the search does not need);
every other command line goes to the click group in ``memrouter.cli``. Both
of those modules are imported from here only, so the dependency runs one way.
"""

from __future__ import annotations

import gc
import os
import sys

__all__ = ["main"]


def main() -> None:
    """Run ``memrouter`` with ``sys.argv``."""
    # A plain search is a short process that ends in os._exit: looking for reference cycles while it imports
    # and searches only costs it time (about 5% of a cold search). Every other command collects as usual.
    gc.disable()
    from memrouter.cli.fast_search import parse_search_argv, run_search

    request = parse_search_argv(sys.argv[1:])
    if request is None:
        gc.enable()
        from memrouter.cli import main as cli_main

        cli_main(prog_name="memrouter")
        return
    try:
        code = run_search(request)
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (``| head``): nothing more to say
        code = 1
    # End without the interpreter's teardown: freeing every module object takes
    # longer than the search itself, and the search has closed its index.
    os._exit(code)


if __name__ == "__main__":
    main()
