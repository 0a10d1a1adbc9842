"""The output parser: one linear-time engine for whole texts and streams (``engine``), call readers,
argument scanners and the message/delta types."""
