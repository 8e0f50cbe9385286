"""Domain models: jobs, requests, results, statuses and errors. No AWS imports here."""
