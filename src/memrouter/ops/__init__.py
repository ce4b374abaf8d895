"""Use cases over a workspace (the files, the index, the clock): writes, lifecycle, review, history, context, janitor."""
