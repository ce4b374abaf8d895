"""The base layer: records, errors, validation, time words, the registry. Imports nothing else of memrouter."""
