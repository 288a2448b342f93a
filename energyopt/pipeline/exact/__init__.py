"""Exact PEM methods: MILP, CP-SAT, brute force, exact frontier, neighbourhood search."""
