"""Readers of the values models write: JSON scanned incrementally, Python and argument literals,
JSON strings mended, values typed by a JSON schema. Shared by the analysis and the runtime."""
