"""``python -m memrouter``: the same as the ``memrouter`` command."""

from memrouter.cli.console import main

main()
