"""Test support: Hypothesis machines, builders and test-only mutants. Nothing here is a test."""
