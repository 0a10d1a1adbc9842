# Type stubs for the parts of parsimonious (no stubs of its own) that autoparser uses.
