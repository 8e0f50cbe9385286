"""Pure chunk arithmetic and the chunk writer, shared by Plan, Retry and a dry run."""
