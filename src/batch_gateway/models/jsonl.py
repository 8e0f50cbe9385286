"""The JSONL input format: defined with the API contract in ``batch_gateway.contract.jsonl`` (the CLI reads files with
it too) and imported from here by the server code (the drop folder, the payload store)."""

from batch_gateway.contract.jsonl import (
    HEADER_FIELDS,
    HEADER_KEY,
    LINE_FIELDS,
    MAX_DETAILS,
    ParsedFile,
    RequestFile,
    dump_jsonl,
    dumps_line,
    iter_jsonl_lines,
    parse_jsonl,
    parse_jsonl_file,
    split_lines,
)

__all__ = [
    "HEADER_FIELDS",
    "HEADER_KEY",
    "LINE_FIELDS",
    "MAX_DETAILS",
    "ParsedFile",
    "RequestFile",
    "dump_jsonl",
    "dumps_line",
    "iter_jsonl_lines",
    "parse_jsonl",
    "parse_jsonl_file",
    "split_lines",
]
