"""Benchmarks and load tools (run with `python -m bench.<name>`)."""
