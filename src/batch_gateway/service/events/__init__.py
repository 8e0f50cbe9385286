"""Signals: job events and metrics, and webhook deliveries (URL policy and delivery)."""
