"""The Step Functions steps: Plan, Submit (and the quota gate), Poll, Collect, Retry, Finalize, wind-down, Park's
wake, and the sweeper. A step never imports the API, the doors or the inbound use cases (an import-linter contract)."""
