"""Money: the estimate of what a job may cost (pure), and the ledger of what it reserves and settles."""
