"""arc_types.py — the stand-in's type names (arc-dsl has one such module)."""
Grid = tuple
