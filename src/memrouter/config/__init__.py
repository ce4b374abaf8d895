"""Configuration: the only reader of memrouter.toml, the projects file and MEMROUTER_* variables."""
