"""What the client and the server agree on, named once: job and item statuses (``statuses``), the error tree and its
wire types (``errors``), the JSONL input file format (``jsonl``), and the shapes of what the API answers: the job view
(``jobs``) and the result item (``results``), as TypedDicts (decision 0105).

Standard library only, and it imports nothing else from ``batch_gateway``: the SDK (``client/``, ``cli.py``) and the
service (``models/`` and up) both build on it, so neither has to import the other.
"""
