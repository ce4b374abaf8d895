"""``python -m memrouter``: the same as the ``memrouter`` command."""

from memrouter.cli import main

main()
