"""``Usage.to_dict``, ``Usage.add`` and ``Usage.subtract`` name the fields (collect calls them once a result line);
they must answer what Record's generic ones answer, for every field, so a field added to ``Usage`` and not to them
fails here."""

from __future__ import annotations

import dataclasses

from batch_gateway.models.jobs import Record, Usage, _field_names


def a_usage(start: int) -> Usage:
    return Usage(**{name: start + i for i, name in enumerate(_field_names(Usage))})


def test_to_dict_is_records_to_dict_field_for_field_in_order():
    usage = a_usage(3)
    assert list(usage.to_dict().items()) == list(Record.to_dict(usage).items())


def test_add_sums_every_field():
    left, right = a_usage(1), a_usage(100)
    total = left.add(right)
    for field in dataclasses.fields(Usage):
        assert getattr(total, field.name) == getattr(left, field.name) + getattr(right, field.name), field.name


def test_subtract_takes_every_field_and_undoes_add():
    left, right = a_usage(1), a_usage(100)
    diff = right.subtract(left)
    for field in dataclasses.fields(Usage):
        assert getattr(diff, field.name) == getattr(right, field.name) - getattr(left, field.name), field.name
    assert left.add(right).subtract(right) == left
