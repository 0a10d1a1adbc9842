"""Diffing renderings into shared parts and marker-bounded differences."""
