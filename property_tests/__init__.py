"""pytest + Hypothesis suites: unit tests per transition branch, stateful machines per
world, and scenario tests named after the Java tests they mirror."""
