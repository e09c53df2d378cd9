"""spark_harness: see docs/architecture.md."""
