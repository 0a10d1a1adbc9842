"""Per-request decisions for inference servers, derived from the template analysis and tokenizer facts."""
