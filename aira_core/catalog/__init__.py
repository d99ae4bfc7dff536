"""Signed capability packages, trust, lint, conformance and the production catalog."""
