"""Context values of the end-to-end layer's shared local stack (tests/e2e/conftest.py) that its tests assert on."""

from __future__ import annotations

PASSED_BETAS = ["output-300k-2026-03-24", "output-128k-2025-02-19"]  # the stack's allow-list of betas (decision 0129)
