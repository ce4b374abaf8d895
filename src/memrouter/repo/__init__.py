"""The git repository the memories live in: what git says, read with plumbing, never a checkout."""
