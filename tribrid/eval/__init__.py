"""Evaluation harness: ast-derived query sets, metrics, and a runner over every leg and the gateway."""
