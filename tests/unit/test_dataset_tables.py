"""Dataset tables and templates (decision 0136): RFC 4180 CSV as spreadsheets write it, rows numbered as a
spreadsheet numbers them, a template that can only name columns, and every bad row named."""

from __future__ import annotations

import io

import pytest

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.dataset import (
    TableReader,
    Template,
    parse_dataset,
    requests_of,
    result_columns,
    text_lines,
)
from batch_gateway.models.jobs import Dataset


def _csv(text: str, template: str = "{text}", **spec) -> TableReader:
    return TableReader.of_csv(Dataset(template=template, **spec), text_lines([text.encode("utf-8")]))


def _csv_bytes(data: bytes) -> TableReader:
    return TableReader.of_csv(Dataset(template="{text}"), text_lines([data]))


def _requests(reader: TableReader) -> list[tuple[str, str, int]]:
    return [(rid, request["prompt"], row) for rid, request, row in requests_of(reader)]


def _problems(text: str, **spec) -> list[dict]:
    reader = _csv(text, **spec)
    list(requests_of(reader))
    return reader.problems


def test_quoted_commas_quotes_and_line_breaks_stay_in_their_field_and_rows_count_as_a_spreadsheet_shows_them():
    reader = _csv('id,text\r\n1,"a, b"\r\n2,"say ""hi"""\r\n3,"two\r\nlines"\r\n4,last\r\n', id_column="id")
    assert _requests(reader) == [
        ("1", "a, b", 2),
        ("2", 'say "hi"', 3),
        ("3", "two\r\nlines", 4),
        ("4", "last", 5),  # row 5, though it is the file's sixth line
    ]
    assert not reader.problems


def test_a_byte_order_mark_is_not_part_of_the_first_column_and_is_noted():
    reader = _csv("\ufeffid,text\n7,x\n", id_column="id")
    assert reader.columns == ["id", "text"] and reader.bom
    assert _requests(reader) == [("7", "x", 2)]
    assert not _csv("id,text\n7,x\n").bom


def test_unicode_and_empty_fields_are_kept_and_blank_lines_are_skipped_but_counted():
    reader = _csv("text,extra\nGrüße 🌍 日本,\n\nnext,\n", template="{text}|{extra}")
    assert _requests(reader) == [("2", "Grüße 🌍 日本|", 2), ("4", "next|", 4)]


def test_a_file_without_a_final_line_break_reads_its_last_row():
    assert _requests(_csv("text\na\nb")) == [("2", "a", 2), ("3", "b", 3)]


def test_a_utf8_character_split_across_chunks_is_read_whole():
    data = "text\nü\n".encode()
    split = [data[:6], data[6:]]  # the two bytes of ü in different chunks
    reader = TableReader.of_csv(Dataset(template="{text}"), text_lines(split))
    assert _requests(reader) == [("2", "ü", 2)]


def test_text_that_is_not_utf8_is_refused_with_its_line():
    with pytest.raises(InvalidRequestError, match="line 2 is not UTF-8 text"):
        list(requests_of(_csv_bytes("text\nSch\xf6n\n".encode("latin-1"))))


def test_an_unknown_placeholder_is_refused_naming_the_column_and_the_columns_there_are():
    with pytest.raises(InvalidRequestError) as raised:
        _csv("id,body\n1,x\n", template="Summarise: {text}")
    assert raised.value.details == [
        {"field": "dataset.template", "message": "unknown column 'text' (the columns are: id, body)"}
    ]
    with pytest.raises(InvalidRequestError, match="dataset.system: unknown column 'tone'"):
        _csv("text\nx\n", system="Be {tone}")


@pytest.mark.parametrize(
    "template",
    ["{text.__class__}", "{text[0]}", "{text!r}", "{text:>20}", "{}"],
)
def test_a_placeholder_that_is_not_a_plain_column_name_is_refused(template):
    with pytest.raises(InvalidRequestError) as raised:
        Template.parse(template, "dataset.template")
    assert raised.value.details[0]["field"] == "dataset.template"


def test_double_braces_are_literal_braces_and_a_lone_brace_is_refused():
    assert Template.parse('JSON: {{"v": "{text}"}}', "t").fill({"text": "x"}) == 'JSON: {"v": "x"}'
    with pytest.raises(InvalidRequestError, match="literal brace"):
        Template.parse("a } b", "dataset.template")
    with pytest.raises(InvalidRequestError, match="literal brace"):
        Template.parse("a { b", "dataset.template")


def test_a_value_holding_braces_is_inserted_as_it_is_never_formatted_again():
    reader = _csv("text\n{other} {{x}}\n", template="<{text}>")
    assert _requests(reader) == [("2", "<{other} {{x}}>", 2)]


def test_duplicate_and_invalid_ids_are_refused_with_their_rows():
    problems = _problems("id,text\na,1\nb,2\na,3\n,4\n", id_column="id")
    assert problems == [
        {"row": 4, "message": "duplicate id 'a' (first on row 2)"},
        {"row": 5, "message": "id column 'id': ids must be non-empty strings"},
    ]


def test_a_missing_id_column_is_refused_naming_the_columns():
    with pytest.raises(InvalidRequestError) as raised:
        _csv("key,text\na,1\n", id_column="id")
    assert raised.value.details == [
        {"field": "dataset.id_column", "message": "unknown column 'id' (the columns are: key, text)"}
    ]


def test_an_empty_file_and_a_header_only_file_are_refused():
    with pytest.raises(InvalidRequestError, match="row 1: the table's first row is the header"):
        _csv("")
    assert _problems("text\n") == [{"row": 2, "message": "the table has no rows, only its header"}]


def test_a_header_naming_a_column_twice_or_not_at_all_is_refused():
    with pytest.raises(InvalidRequestError, match="column 'text' appears twice"):
        _csv("text,text\na,b\n")
    with pytest.raises(InvalidRequestError, match="column 2 has no name"):
        _csv("text,\na,b\n")


def test_rows_with_too_many_or_too_few_fields_and_malformed_quoting_are_named():
    assert _problems('text,b\n1\n1,2,3\n"x"y,2\n') == [
        {"row": 2, "message": "1 fields, but the header names 2 columns"},
        {"row": 3, "message": "3 fields, but the header names 2 columns"},
        {
            "row": 4,
            "message": "malformed CSV (',' expected after '\"'); a field holding a comma, a quote or a line break is "
            'quoted, and a quote inside it doubled (""); the table was read up to here',
        },
    ]


def test_a_row_whose_filled_template_is_empty_is_named():
    assert _problems("text\n   \n") == [
        {"row": 2, "message": "the template filled with this row is empty (empty columns: text)"}
    ]


def test_at_most_100_problems_are_listed_and_all_are_counted():
    reader = _csv("id,text\n" + "".join(f"a,{i}\n" for i in range(150)), id_column="id")
    list(requests_of(reader))
    assert len(reader.problems) == 100 and reader.count == 149


def test_records_keep_the_first_records_keys_as_columns_and_refuse_others():
    spec = Dataset(template="{q}", format="jsonl")
    reader = TableReader.of_records(spec, [{"q": "a", "n": 1}, {"q": "b"}, {"q": "c", "zzz": 1}, {"q": {"x": 1}}])
    assert _requests(reader) == [("1", "a", 1), ("2", "b", 2)]
    assert reader.problems == [
        {"row": 3, "message": "column 'zzz' is not one of the first row's (q, n)"},
        {"row": 4, "message": "column 'q': a value is a string, a number, true, false or null"},
    ]


def test_a_jsonl_file_of_records_numbers_rows_by_line_and_reads_a_settings_line():
    lines = [b'{"batch_gateway": {"provider": "openai"}}', b'{"q": "a"}', b"", b"not json", b'{"q": "b"}']
    reader = TableReader.of_jsonl(Dataset(template="{q}", format="jsonl"), lines)
    assert reader.header == {"provider": "openai"}
    assert _requests(reader) == [("2", "a", 2), ("5", "b", 5)]
    assert reader.problems[0]["row"] == 4 and reader.problems[0]["message"].startswith("invalid JSON")


def test_result_columns_step_aside_from_input_columns_of_the_same_name():
    assert result_columns(["id", "question"]) == ["text", "status", "error", "input_tokens", "output_tokens", "cost"]
    assert result_columns(["text", "status", "result_text"])[:3] == ["result_result_text", "result_status", "error"]


@pytest.mark.parametrize(
    ("dataset", "input_file", "field"),
    [
        ("x", False, "dataset"),
        ({"csv": "a\nb\n"}, False, "dataset.template"),
        ({"csv": "a\nb\n", "template": "  "}, False, "dataset.template"),
        ({"csv": 5, "template": "{a}"}, False, "dataset.csv"),
        ({"records": {"a": 1}, "template": "{a}"}, False, "dataset.records"),
        ({"csv": "a\n", "template": "{a}"}, True, "dataset.csv"),
        ({"template": "{a}", "format": "xlsx"}, True, "dataset.format"),
        ({"csv": "a\n", "template": "{a}", "system": 3}, False, "dataset.system"),
        ({"csv": "a\n", "template": "{a}", "id_column": ""}, False, "dataset.id_column"),
    ],
)
def test_the_dataset_object_is_checked_naming_the_field(dataset, input_file, field):
    with pytest.raises(InvalidRequestError) as raised:
        parse_dataset(dataset, input_file=input_file)
    assert raised.value.details[0]["field"] == field


def test_an_inline_csv_read_from_a_string_stream_reads_the_same():
    reader = TableReader.of_csv(Dataset(template="{t}"), io.StringIO('t\n"a\nb"\n', newline=""))
    assert _requests(reader) == [("2", "a\nb", 2)]
