"""Handler conformance: does another implementation's handler answer as the reference does?

Theory of operation
-------------------
An implementation under test runs behind a *driver*: a program that speaks the
JSON-lines protocol `rmqspec.conform/1` on its stdin and stdout (conform.driver). For
each case rmqspec sends one node's state, the time and one input (a request, a
response or RPC failure of the node's open call, a tick with the random draws it may
make); the driver loads the state into its own handler, applies the input and answers
with the reply, the outputs (messages sent, deferred answers, role changes, draws) and
the resulting state. rmqspec compares that answer with the reference's, field by field
(conform.compare).

Cases come from Hypothesis strategies built on the relations the Java code branches on
(conform.election_cases); the first mismatch is shrunk by Hypothesis to a minimal case.
The same cases, with the deterministic edge cases first and the reference's answers
attached, are written as static vectors (`rmqspec vectors`) for implementations that
prefer to run them in their own test suite (conform.session).

This is a checker: it imports the reference (reference_impl) and nothing of the other
checkers. It sits beside `model_checks` rather than in it because it checks another
program, not the reference or its symbolic spec (model_checks.conformance checks the
reference against the spec: a different question with a similar name).

Modules
-------
| module | does |
|---|---|
| `driver` | the driver process, the protocol's lines, hello and timeouts |
| `election` | election cases on the wire: state, input and answer encodings, the reference's answer |
| `election_cases` | Hypothesis strategies and deterministic edge cases for election |
| `compare` | expected answer versus got: the differing fields |
| `session` | runs: generated cases with shrinking, static vectors, writing vectors |

Adapters (a driver for the reference itself, and deliberately broken ones the tests
must catch) are test code: property_tests/drivers/.
"""
