"""Discretised privacy-loss distributions (004 Sec. 3-4)."""
