"""Evaluation harness: query sets built from real code and documents, metrics, and a runner over
every leg and the gateway. Run from a source checkout (`make eval`); never imported at run time."""

from pathlib import Path

# The source checkout: evals/ (sets, question banks, results) and bench/ live there.
REPO_ROOT = Path(__file__).resolve().parent.parent
