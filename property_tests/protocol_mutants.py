"""The stable path of the test-only protocol mutants (`--import property_tests.protocol_mutants`):
importing it registers them; they live in property_tests.support.protocol_mutants."""

from property_tests.support.protocol_mutants import ELECTION_MUTANT, PROTOCOL  # noqa: F401  (registers the mutant)
