"""Independent reference computations used by the tests only (never imported by dpamp)."""
