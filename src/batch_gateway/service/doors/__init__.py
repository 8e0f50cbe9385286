"""The compatible front doors: a provider's own wire format on the gateway's jobs. Each door is independent of the
other (an import-linter contract)."""
