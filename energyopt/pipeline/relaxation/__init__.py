"""The convex-hull relaxation of PEM: its bound curve, and the plan rounded from it."""
