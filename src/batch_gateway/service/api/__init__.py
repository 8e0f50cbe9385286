"""The native HTTP API's use cases, one module per route family: create (the pipeline), batches (POST /batches and its
dry run), files and uploads (input files), query, cancel, budgets, keys, webhooks (subscriptions)."""
