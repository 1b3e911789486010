"""Rényi-DP machinery: subsampled curves, conversions, the analytical moments accountant."""
