"""The formal spec: properties as executable predicates over world states (and, beside
them, Z3 renderings). Predicates read reference states and ghost variables only."""
