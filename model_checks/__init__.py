"""model_checks: see docs/architecture.md."""
