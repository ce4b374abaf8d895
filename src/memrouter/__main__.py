"""``python -m memrouter``: the same as the ``memrouter`` command."""

from memrouter.console import main

main()
