"""The Anthropic Message Batches door (decision 0051)."""
