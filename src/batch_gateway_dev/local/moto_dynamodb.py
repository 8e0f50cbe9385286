"""moto's DynamoDB made cheaper where it spends the local stack's and the suite's CPU, answering as before.

- **Answers**: moto's response serializer walks every attribute value of an answer member by member through the
  service model (a value picker and its candidate keys per member), about a tenth of the local AWS process's CPU in
  the e2e suite. An attribute value in a result is already its wire shape (``{"S": ...}``, ``{"M": {...}}``), so it
  is copied as it is, binary members base64-encoded as the serializer does.
- **Transactions**: ``TransactWriteItems`` deep-copied every table it touches before it began, to put the copy back
  if it was cancelled: the whole table per transaction, so a transaction cost grew with the table (and putting a
  table back erased writes other requests made meanwhile). It keeps the items it touches instead and puts back only
  those.

``install()`` is called by the local AWS process (``aws_server``) and by the test suite for its in-process moto.
``tests/integration/test_local_aws_answers.py`` holds every read of every attribute type to what was written, and
``tests/unit/test_moto_dynamodb.py`` a cancelled transaction to the items as they were.
"""

from __future__ import annotations

import base64
import copy
import functools
import types
from typing import Any

_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    _attribute_values_copied()
    _transactions_undo_their_own_items()


def _attribute_values_copied() -> None:
    from moto.core.serialize import BaseJSONSerializer

    real = BaseJSONSerializer._serialize_type_structure

    def structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if key and shape.name == "AttributeValue" and isinstance(value, dict):
            serialized[self.get_serialized_name(shape, key)] = wire_attribute(value)
            return
        real(self, serialized, value, shape, key)

    BaseJSONSerializer._serialize_type_structure = structure  # type: ignore[method-assign]  # patching moto


def wire_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """An attribute value as DynamoDB's JSON protocol answers it."""
    out: dict[str, Any] = {}
    for kind, member in value.items():
        if member is None:
            continue
        if kind == "M":
            out[kind] = {name: wire_attribute(item) for name, item in member.items()}
        elif kind == "L":
            out[kind] = [wire_attribute(item) for item in member]
        elif kind == "B":
            out[kind] = _base64(member)
        elif kind == "BS":
            out[kind] = [_base64(item) for item in member]
        elif kind in ("SS", "NS"):
            out[kind] = [str(item) for item in member]
        elif kind in ("S", "N"):
            out[kind] = str(member)
        else:  # BOOL, NULL
            out[kind] = member
    return out


def _base64(value: str | bytes) -> str:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return base64.b64encode(raw).strip().decode("utf-8")


def _transactions_undo_their_own_items() -> None:
    from moto.dynamodb import models
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    def deepcopy(value: Any, memo: Any = None) -> Any:
        # the backup of a whole table that transact_write_items takes (and puts back): the table itself instead
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    models.copy = types.SimpleNamespace(deepcopy=deepcopy, copy=copy.copy)  # type: ignore[attr-defined,assignment]  # patching
    real = DynamoDBBackend.transact_write_items

    @functools.wraps(real)
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        before = []
        for entry in transact_items if len(transact_items) <= 100 else ():
            for op in entry.values():
                name = op.get("TableName") if isinstance(op, dict) else None
                try:
                    key = _key(self, name, op) if name in self.tables else None
                    item = None if key is None else self.get_item(name, key)
                except Exception:  # a key moto refuses: the transaction fails on it before any write
                    continue
                if key is not None:
                    before.append((name, key, None if item is None else copy.deepcopy(item.to_json()["Attributes"])))
        try:
            real(self, transact_items)
        except Exception:
            for name, key, attributes in reversed(before):  # the first state of an item touched twice wins
                if attributes is None:
                    if self.get_item(name, key) is not None:
                        self.delete_item(name, key)
                else:
                    self.put_item(name, attributes)
            raise

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]  # patching moto


def _key(backend: Any, table_name: Any, op: dict[str, Any]) -> dict[str, Any] | None:
    if "Key" in op:
        return op["Key"]  # type: ignore[no-any-return]
    item = op.get("Item")
    table = backend.tables[table_name]
    if not isinstance(item, dict) or table.hash_key_attr not in item:
        return None
    key = {table.hash_key_attr: item[table.hash_key_attr]}
    if table.range_key_attr is not None and table.range_key_attr in item:
        key[table.range_key_attr] = item[table.range_key_attr]
    return key
