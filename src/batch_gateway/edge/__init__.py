"""What the Lambda entry points share: HTTP mapping and observability. Thin on purpose."""
