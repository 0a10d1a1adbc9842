"""Probes: render needle conversations and read what the template supports."""
