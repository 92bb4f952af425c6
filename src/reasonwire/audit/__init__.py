"""Continuity audit (placeholder docstring)."""
