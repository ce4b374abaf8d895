"""``python -m memrouter``: the same as the ``memrouter`` command."""

from memrouter.search_command import main

main()
