"""Per-owner limits on creates (decision 0119): create's admission and its undo, the slot an open job holds and its
release at the end, and the sweeper's repair of slots nothing freed."""
