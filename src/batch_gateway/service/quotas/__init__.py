"""Provider quotas: the admission rule (pure) and the repair of ledgers a dead step left holding."""
