"""What Finalize writes besides ``results.jsonl``: the compatible doors' own output files."""
