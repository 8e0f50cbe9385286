"""What the client and the server agree on, named once: job and item statuses (``statuses``), the error tree and its
wire types (``errors``), and the JSONL input file format (``jsonl``).

Standard library only, and it imports nothing else from ``batch_gateway``: the SDK (``client/``, ``cli.py``) and the
service (``models/`` and up) both build on it, so neither has to import the other.
"""
