"""Grammars generated from an analysis: parsimonious PEG (``peg``) and GBNF (``gbnf``, ``schema``, ``request``)."""
