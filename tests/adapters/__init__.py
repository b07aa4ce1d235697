"""Tests of the framework adapters (each skipped when its framework is not installed)."""
