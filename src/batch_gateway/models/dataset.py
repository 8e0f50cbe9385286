"""Dataset jobs (decision 0136): a table (a CSV, or a list of records) and a prompt template become one request per
row, and the results go back into the same table as columns appended to it.

Rows are numbered as a spreadsheet numbers them: in a CSV the header is row 1 and the first data row row 2 (a field
holding a line break is still one row, as a spreadsheet shows it); in a JSONL file of records a row's number is its
line; in an inline list of records the first record is row 1. Every problem names its row; a table with any problem
makes no job.

The template is filled by a formatter of our own, not ``str.format``: only plain ``{column}`` placeholders (no
attribute or index access, no conversion, no format spec), ``{{`` and ``}}`` for literal braces. Pure Python: no AWS.
"""

from __future__ import annotations

import csv
import json
import string
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.contract.jsonl import split_lines
from batch_gateway.models.jobs import Dataset
from batch_gateway.models.jsonl import iter_jsonl_lines
from batch_gateway.models.requests import check_caller_id

FORMATS = ("csv", "jsonl")
DATASET_FIELDS = ("csv", "records", "format", "template", "system", "id_column")
# The columns the results add, in this order; one whose name the input already has is prefixed ``result_``.
RESULT_COLUMNS = ("text", "status", "error", "input_tokens", "output_tokens", "cost")
MAX_ROW_PROBLEMS = 100
# A cell may be as long as the table (the request's own check refuses a text above 1,000,000 characters, naming its
# row); the csv module's default (131,072) would call a long cell malformed.
MAX_FIELD_CHARS = 1 << 30
HEADER_KEY = "batch_gateway"  # a JSONL file's optional first line of settings (contract.jsonl)


def _bad(field_name: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"invalid dataset: {field_name}: {message}", details=[{"field": field_name, "message": message}]
    )


@dataclass(frozen=True)
class Template:
    """A prompt template, parsed once: literal text and the column each placeholder names."""

    text: str
    pieces: tuple[tuple[str, str | None], ...]  # (literal, column or None)

    @property
    def columns(self) -> list[str]:
        return [name for _, name in self.pieces if name is not None]

    @classmethod
    def parse(cls, text: Any, where: str) -> Template:
        if not isinstance(text, str) or not text.strip():
            raise _bad(where, "must be a non-empty string such as 'Summarise: {text}'")
        pieces: list[tuple[str, str | None]] = []
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise _bad(where, f"{exc}; write {{{{ and }}}} for a literal brace") from None
        for literal, name, spec, conversion in parsed:
            if name is None:
                pieces.append((literal, None))
                continue
            said = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            if conversion or spec or not name or any(c in name for c in ".[]"):
                raise _bad(
                    where,
                    f"placeholder {said[:100]} is not a column name: a placeholder is {{column}}, with no attribute, "
                    "index, conversion or format; write {{ and }} for a literal brace",
                )
            pieces.append((literal, name))
        return cls(text=text, pieces=tuple(pieces))

    def fill(self, row: Mapping[str, str]) -> str:
        return "".join(literal + (row[name] if name is not None else "") for literal, name in self.pieces)


@dataclass(frozen=True)
class DatasetInput:
    """The ``dataset`` object of a create body, checked: the job's recipe and its inline table (if any)."""

    spec: Dataset
    csv: str | None = None
    records: list[Any] | None = None


def parse_dataset(value: Any, *, input_file: bool) -> DatasetInput:
    """Check a create body's ``dataset``: exactly one of ``csv`` and ``records`` inline, or neither with the body's
    ``input_file`` (whose ``format`` says csv or jsonl); a template; an optional system prompt and id column."""
    if not isinstance(value, dict):
        raise _bad("dataset", 'must be an object such as {"csv": "...", "template": "Summarise: {text}"}')
    unknown = [str(k)[:100] for k in value if k not in DATASET_FIELDS]
    if unknown:
        raise _bad(f"dataset.{unknown[0]}", f"is not a known field (allowed: {', '.join(DATASET_FIELDS)})")
    inline = [name for name in ("csv", "records") if name in value]
    if input_file and inline:
        raise _bad(f"dataset.{inline[0]}", "not allowed with input_file: the uploaded file is the table")
    if not input_file and len(inline) != 1:
        raise _bad("dataset", "give exactly one of csv (CSV text) or records (a list of objects), or an input_file")
    csv_text, records = value.get("csv"), value.get("records")
    if "csv" in value and not isinstance(csv_text, str):
        raise _bad("dataset.csv", "must be the CSV text, its first line the header")
    if "records" in value and not isinstance(records, list):
        raise _bad("dataset.records", "must be a list of objects, one per row")
    fmt = value.get("format")
    if fmt is not None and (not input_file or fmt not in FORMATS):
        why = "is for input_file only" if not input_file else "must be 'csv' or 'jsonl'"
        raise _bad("dataset.format", why)
    inline_format = "csv" if "csv" in value else "jsonl"
    fmt = (fmt or "csv") if input_file else inline_format
    Template.parse(value.get("template"), "dataset.template")
    system = value.get("system")
    if system is not None:
        if not isinstance(system, str):
            raise _bad("dataset.system", "must be a string")
        if system.strip():  # an empty one is none
            Template.parse(system, "dataset.system")
    id_column = value.get("id_column")
    if id_column is not None and (not isinstance(id_column, str) or not id_column):
        raise _bad("dataset.id_column", "must be the name of a column")
    spec = Dataset(
        template=value["template"],
        format=fmt,
        system=system if system and system.strip() else None,
        id_column=id_column,
    )
    return DatasetInput(spec=spec, csv=csv_text, records=records)


@dataclass
class Row:
    """One row of a table: its spreadsheet row number (the header is row 1), its request id and its fields."""

    number: int
    id: str
    values: list[str]


@dataclass
class TableReader:
    """A table read once, row by row (memory flat in its size, but a set of its ids): ``columns`` first, then
    :meth:`rows`. Problems go to ``problems`` as ``{"row", "message"}`` (at most ``MAX_ROW_PROBLEMS``; ``count``
    counts them all); the caller raises them once every row is read."""

    spec: Dataset
    problems: list[dict[str, Any]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    header: dict[str, Any] | None = None  # a JSONL file's settings line
    bom: bool = False  # the CSV began with a byte order mark (written back, for spreadsheets that need it)
    count: int = 0
    _records: Iterator[tuple[int, list[str] | dict[str, Any]]] | None = None
    _first: tuple[int, Any] | None = None

    def problem(self, row: int, message: str) -> None:
        self.count += 1
        if len(self.problems) < MAX_ROW_PROBLEMS:
            self.problems.append({"row": row, "message": message})

    # -- opening a table: the header (the columns) is read at once -------------------------------------------------

    @classmethod
    def of_csv(cls, spec: Dataset, lines: Iterable[str]) -> TableReader:
        """A CSV given as text lines with their line endings (``text_lines``, or ``io.StringIO(text)``)."""
        reader = cls(spec)
        csv.field_size_limit(max(csv.field_size_limit(), MAX_FIELD_CHARS))
        numbered = reader._csv_records(csv.reader(reader._without_bom(lines), strict=True))
        first = next(numbered, None)
        if first is None or not first[1]:
            raise _bad("dataset", "row 1: the table's first row is the header, naming its columns; it is empty")
        header = first[1]
        assert isinstance(header, list)
        reader._set_columns(header, 1)
        reader._records = numbered
        return reader

    def _without_bom(self, lines: Iterable[str]) -> Iterator[str]:
        it = iter(lines)
        first = next(it, None)
        if first is None:
            return
        self.bom = first.startswith("\ufeff")
        yield first.removeprefix("\ufeff")
        yield from it

    def _csv_records(self, records: Iterator[list[str]]) -> Iterator[tuple[int, list[str] | dict[str, Any]]]:
        number = 0
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except csv.Error as exc:
                self.problem(
                    number + 1,
                    f"malformed CSV ({exc}); a field holding a comma, a quote or a line break "
                    'is quoted, and a quote inside it doubled (""); the table was read up to here',
                )
                return
            number += 1
            yield number, record

    @classmethod
    def of_records(cls, spec: Dataset, records: Iterable[Any]) -> TableReader:
        """An inline list of records (objects of column -> value); the first record is row 1."""
        reader = cls(spec)
        reader._open_records(enumerate(records, start=1), "record")
        return reader

    @classmethod
    def of_jsonl(cls, spec: Dataset, lines: Iterable[bytes]) -> TableReader:
        """A JSONL file of records, one object per line (blank lines skipped); a row's number is its line. Its first
        line may be a settings line ``{"batch_gateway": {...}}`` (the drop folder's), kept in ``header``."""
        reader = cls(spec)
        reader._open_records(reader._json_lines(lines), "line")
        return reader

    def _json_lines(self, lines: Iterable[bytes]) -> Iterator[tuple[int, Any]]:
        for number, raw in enumerate(lines, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.problem(number, f"invalid UTF-8 at byte {exc.start + 1}")
                continue
            if number == 1:
                text = text.removeprefix("\ufeff")
            if not text.strip():
                continue
            try:
                yield number, json.loads(text)
            except ValueError as exc:
                self.problem(number, f"invalid JSON: {exc}")

    def _open_records(self, numbered: Iterator[tuple[int, Any]], what: str) -> None:
        """The first record's keys are the columns (after a JSONL file's settings line, if it has one)."""
        for position, (number, record) in enumerate(numbered):
            if what == "line" and position == 0 and isinstance(record, dict) and set(record) == {HEADER_KEY}:
                if isinstance(record[HEADER_KEY], dict):
                    self.header = record[HEADER_KEY]
                else:
                    self.problem(number, f'the "{HEADER_KEY}" settings line must hold an object')
                continue
            if not isinstance(record, dict) or not record:
                raise _bad(
                    "dataset",
                    f"{what} {number}: the first row must be an object of column -> value (its keys are the columns)",
                )
            self._set_columns([str(k) for k in record], number)
            self._first = (number, record)
            break
        self._records = numbered

    def _set_columns(self, header: list[str], row: int) -> None:
        seen: set[str] = set()
        for position, name in enumerate(header, start=1):
            if not name.strip():
                raise _bad("dataset", f"row {row}: column {position} has no name (the header names every column)")
            if name in seen:
                raise _bad("dataset", f"row {row}: column '{name[:100]}' appears twice in the header")
            seen.add(name)
        self.columns = header
        for where, text in (("dataset.template", self.spec.template), ("dataset.system", self.spec.system)):
            if text is None:
                continue
            for name in Template.parse(text, where).columns:
                if name not in seen:
                    raise _bad(where, f"unknown column '{name[:100]}' (the columns are: {_listed(header)})")
        if self.spec.id_column is not None and self.spec.id_column not in seen:
            raise _bad(
                "dataset.id_column",
                f"unknown column '{self.spec.id_column[:100]}' (the columns are: {_listed(header)})",
            )

    # -- the rows ---------------------------------------------------------------------------------------------------

    def rows(self) -> Iterator[Row]:
        """Each good row with its id, in order; blank CSV lines are skipped (a spreadsheet's empty rows)."""
        assert self._records is not None
        width = len(self.columns)
        id_at = self.columns.index(self.spec.id_column) if self.spec.id_column is not None else None
        first_row_of: dict[str, int] = {}
        pending = self._first
        self._first = None
        rows = 0
        while True:
            current = pending or next(self._records, None)
            pending = None
            if current is None:
                break
            number, record = current
            if isinstance(record, list):
                if not record:
                    continue
                if len(record) != width:
                    self.problem(number, f"{len(record)} fields, but the header names {width} columns")
                    rows += 1
                    continue
                values = record
            else:
                values_or_why = self._record_values(record)
                if isinstance(values_or_why, str):
                    self.problem(number, values_or_why)
                    rows += 1
                    continue
                values = values_or_why
            rows += 1
            row_id = values[id_at] if id_at is not None else str(number)
            why = check_caller_id(row_id)
            if why:
                self.problem(number, f"id column '{self.spec.id_column}': {why.replace('request ids', 'ids')}")
                continue
            first = first_row_of.setdefault(row_id, number)
            if first != number:
                self.problem(number, f"duplicate id '{row_id[:100]}' (first on row {first})")
                continue
            yield Row(number=number, id=row_id, values=values)
        if not rows:
            if self.spec.format == "csv":
                self.problem(2, "the table has no rows, only its header")
            else:
                self.problem(1, "the table has no rows")

    def _record_values(self, record: Any) -> list[str] | str:
        if not isinstance(record, dict):
            return "a row is an object of column -> value"
        extra = [k for k in record if k not in self.columns]
        if extra:
            return f"column '{str(extra[0])[:100]}' is not one of the first row's ({_listed(self.columns)})"
        values = []
        for name in self.columns:
            value = record.get(name)
            if isinstance(value, dict | list):
                return f"column '{name[:100]}': a value is a string, a number, true, false or null"
            values.append("" if value is None else value if isinstance(value, str) else json.dumps(value))
        return values

    def raise_problems(self) -> None:
        if self.count:
            raise row_problems(self.problems, self.count)


def row_problems(problems: list[dict[str, Any]], count: int | None = None) -> InvalidRequestError:
    count = max(count or 0, len(problems))
    first = problems[0]
    noun = "problem" if count == 1 else "problems"
    return InvalidRequestError(
        f"invalid dataset: {count} {noun}; row {first['row']}: {first['message']}", details=problems[:MAX_ROW_PROBLEMS]
    )


def _listed(columns: list[str]) -> str:
    shown = ", ".join(c[:60] for c in columns[:20])
    return shown + (f" and {len(columns) - 20} more" if len(columns) > 20 else "")


def text_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Byte chunks of UTF-8 text -> lines with a ``\n`` ending (what the csv module reads: a quoted field may hold a
    line break; a ``\r`` before it is kept), in work linear in the bytes. Raises ``InvalidRequestError`` for bytes
    that are not UTF-8."""
    for number, line in enumerate(split_lines(chunks), start=1):
        yield _decoded(line, number) + "\n"


def _decoded(line: bytes, number: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(
            "dataset", f"line {number} is not UTF-8 text (byte {exc.start + 1}): save the table as 'CSV UTF-8'"
        ) from None


def requests_of(reader: TableReader) -> Iterator[tuple[str, Any, int]]:
    """(id, request, row) for each good row: the template filled with the row's values as the user message, the
    system prompt filled too."""
    spec = reader.spec
    template = Template.parse(spec.template, "dataset.template")
    system = Template.parse(spec.system, "dataset.system") if spec.system else None
    for row in reader.rows():
        by_name = dict(zip(reader.columns, row.values, strict=True))
        prompt = template.fill(by_name)
        if not prompt.strip():
            empty = ", ".join(c for c in template.columns if not by_name[c].strip()) or "none"
            reader.problem(row.number, f"the template filled with this row is empty (empty columns: {empty})")
            continue
        request: dict[str, Any] = {"prompt": prompt}
        if system is not None:
            filled = system.fill(by_name)
            if filled.strip():
                request["system"] = filled
        yield row.id, request, row.number


def result_columns(columns: list[str]) -> list[str]:
    """The names of the columns the results add: ``RESULT_COLUMNS``, each prefixed ``result_`` (again, until unique)
    when the input already has a column of that name."""
    taken = set(columns)
    names = []
    for name in RESULT_COLUMNS:
        while name in taken:
            name = "result_" + name
        taken.add(name)
        names.append(name)
    return names


READ_BYTES = 1 << 16  # a table is read from its stream in pieces of this size


def open_table(spec: Dataset, stream: Any) -> TableReader:
    """The reader of a table of ``spec``'s format over a binary stream (an S3 body, a file, ``io.BytesIO``)."""
    if spec.format == "csv":
        read = stream.read
        return TableReader.of_csv(spec, text_lines(iter(lambda: read(READ_BYTES), b"")))
    return TableReader.of_jsonl(spec, iter_jsonl_lines(stream))
