"""The OpenAI-compatible door: files, uploads and batches in OpenAI's objects (decision 0045)."""
