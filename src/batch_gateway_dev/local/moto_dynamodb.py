"""moto's DynamoDB made cheaper where it spends the local stack's and the suite's CPU, answering as before.

- **Answers**: moto's response serializer walks every attribute value of an answer member by member through the
  service model (a value picker and its candidate keys per member), about a tenth of the local AWS process's CPU in
  the e2e suite. An attribute value in a result is already its wire shape (``{"S": ...}``, ``{"M": {...}}``), so it
  is copied as it is, binary members base64-encoded as the serializer does.
- **Transactions**: ``TransactWriteItems`` deep-copied every table it touches before it began, to put the copy back
  if it was cancelled: the whole table per transaction, so a transaction cost grew with the table (and putting a
  table back erased writes other requests made meanwhile). It keeps the items it touches instead and puts back only
  those.

- **Items**: building an item checked the 400 KB limit on every attribute set, each check summing the size of every
  attribute already set (nested maps walked in full): quadratic in an item's attributes, the larger part of a
  ``PutItem``'s and an ``UpdateItem``'s cost for the job records. An item is built with one check of its whole size,
  the same limit: a sum only grows as attributes are added, so one check at the end refuses exactly the items the
  checks on the way did.
- **Values compared**: an attribute value's value for a comparison (every sort of a table's items for a query,
  every key matched) asked five type predicates before it cast; a set's size and value made an attribute value of
  each member, each time (an owner's quota ledger holds a set of thousands of waiting jobs, and every update of it
  paid that twice). Each is computed by the attribute's type at once, by the same rules.
- **Index projections**: a query on a ``KEYS_ONLY`` or ``INCLUDE`` index turned each whole item into plain JSON
  (deep copies and a deserialiser) to pick a few top-level attributes, then serialised them back. It picks them.
- **Item projections**: a read with a ``ProjectionExpression`` turned the whole item into plain JSON once per
  attribute named (a deserialiser over every attribute), then serialised the picked ones back: a result-reuse
  look-up (decision 0127) paid that 100 times a ``BatchGetItem``. Top-level names are picked as they are; a nested
  path is projected as moto projects it.
- **Partition queries**: a query on the table's own key sorted every item of the table by its key (comparing
  attribute values in Python) to keep those of one partition, then sorted them again by their sort key: its cost
  grew with the whole table, where DynamoDB's grows with the partition read. With the result-reuse index in the jobs
  table (decision 0127: an item a reusable result), every ``get_chunks`` of every job paid for all of them, under the
  lock that serialises item operations. It starts from the partition's items (moto keeps them by partition key);
  the sort by sort key that follows is moto's own, so the answer is the same. Index queries and scans are as moto's.

``install()`` is called by the local AWS process (``aws_server``) and by the test suite for its in-process moto.
``tests/integration/test_local_aws_answers.py`` holds every read of every attribute type to what was written, and
``tests/unit/test_moto_dynamodb.py`` a cancelled transaction to the items as they were.
"""

from __future__ import annotations

import base64
import copy
import functools
import inspect
import threading
import types
from collections.abc import Callable
from typing import Any

_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    _attribute_values_copied()
    _transactions_undo_their_own_items()
    _items_checked_once()
    _values_cast_at_once()
    _index_projections_picked()
    _partition_queries_read_their_partition()
    _item_projections_picked()


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


ITEM_SIZE_LIMIT = 405000  # moto's own (LimitedSizeDict): DynamoDB's 400 KB, as measured between 409 and 410 KB


def _items_checked_once() -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
    from moto.dynamodb.models.utilities import bytesize

    def __init__(self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:
        self.hash_key = hash_key
        self.range_key = range_key
        self.attrs = LimitedSizeDict()
        size = 0
        for key, value in attrs.items():
            typed = DynamoType(value)
            size += bytesize(key) + typed.size()
            dict.__setitem__(self.attrs, key, typed)
        if size > ITEM_SIZE_LIMIT:
            raise ItemSizeTooLarge

    Item.__init__ = __init__  # type: ignore[method-assign]  # patching moto


def _values_cast_at_once() -> None:
    from decimal import Decimal

    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.utilities import bytesize

    real_size = DynamoType.size
    real_cast = DynamoType.cast_value

    def size(self: Any) -> int:
        kind = self.type
        if kind == "NS":  # each member as DynamoType({"N": member}).size(): its length as a string
            return sum(len(str(member)) for member in self.value)
        if kind in ("SS", "BS"):  # each member as DynamoType({"S"|"B": member}).size(): its bytes
            return sum(bytesize(member) for member in self.value)
        return real_size(self)

    def cast(self: Any) -> Any:
        """``cast_value`` by the attribute's type at once (moto asks five predicates first): a string's or a binary's
        own value, a number's Decimal, a set of its members' values; anything else as moto casts it."""
        kind = self.type
        if kind == "S" or kind == "B" or kind == "BOOL":
            return self.value
        if kind == "N":
            return Decimal(self.value)
        if kind == "NS":
            return {Decimal(member) for member in self.value}
        if kind in ("SS", "BS"):
            return set(self.value)
        return real_cast.fget(self)  # type: ignore[attr-defined]

    # Sorting a table's items and matching a key compare attribute values: by their cast values, as moto's own.
    DynamoType.size = size  # type: ignore[method-assign]  # patching moto
    DynamoType.cast_value = property(cast)  # type: ignore[assignment,method-assign]  # patching moto
    DynamoType.__eq__ = lambda self, other: self.type == other.type and cast(self) == cast(other)  # type: ignore[method-assign]
    DynamoType.__ne__ = lambda self, other: self.type != other.type or cast(self) != cast(other)  # type: ignore[method-assign]
    DynamoType.__lt__ = lambda self, other: cast(self) < cast(other)  # type: ignore[method-assign]
    DynamoType.__le__ = lambda self, other: cast(self) <= cast(other)  # type: ignore[method-assign]
    DynamoType.__gt__ = lambda self, other: cast(self) > cast(other)  # type: ignore[method-assign]
    DynamoType.__ge__ = lambda self, other: cast(self) >= cast(other)  # type: ignore[method-assign]
    DynamoType.__hash__ = lambda self: hash((self.type, cast(self)))  # type: ignore[method-assign]


def _index_projections_picked() -> None:
    from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict
    from moto.dynamodb.models.table import SecondaryIndex

    real = SecondaryIndex.project

    def project(self: Any, item: Any) -> Any:
        projection_type = (self.projection or {}).get("ProjectionType")
        if projection_type not in ("KEYS_ONLY", "INCLUDE"):
            return real(self, item)
        names = [*self.table_key_attrs, *(key["AttributeName"] for key in self.schema)]
        if projection_type == "INCLUDE":
            names += self.projection.get("NonKeyAttributes", [])
        picked: Any = Item.__new__(Item)
        picked.hash_key, picked.range_key = item.hash_key, item.range_key
        picked.attrs = LimitedSizeDict()
        for name in names:
            if name in item.attrs and name not in picked.attrs:
                dict.__setitem__(picked.attrs, name, copy.deepcopy(item.attrs[name]))
        return picked

    SecondaryIndex.project = project  # type: ignore[method-assign]  # patching moto


def _item_projections_picked() -> None:
    from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict

    real = Item.project

    def project(self: Any, projection_expressions: list[list[str]]) -> Any:
        if any(len(path) != 1 for path in projection_expressions):  # a nested path: moto's own projection
            return real(self, projection_expressions)
        picked: Any = Item.__new__(Item)
        picked.hash_key, picked.range_key = self.hash_key, self.range_key
        picked.attrs = LimitedSizeDict()
        for (name,) in projection_expressions:
            if name in self.attrs and name not in picked.attrs:
                dict.__setitem__(picked.attrs, name, copy.deepcopy(self.attrs[name]))
        return picked

    Item.project = project  # type: ignore[method-assign]  # patching moto


def _partition_queries_read_their_partition() -> None:
    from moto.dynamodb.models.table import Table

    real_query = Table.query
    real_all_items = Table.all_items
    reading = threading.local()  # (table, partition key) while a query on the table's own key runs on this thread

    def all_items(self: Any) -> Any:
        partition = getattr(reading, "partition", None)
        if partition is None or partition[0] is not self:
            return real_all_items(self)
        held = self.items.get(partition[1])
        if held is None:
            return []
        return list(held.values()) if self.range_key_attr else [held]

    signature = inspect.signature(real_query)

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs).arguments  # the backend passes index_name by position
        hash_key = bound.get("hash_key")
        if bound.get("index_name") or hash_key is None:
            return real_query(self, *args, **kwargs)
        reading.partition = (self, hash_key)
        try:
            return real_query(self, *args, **kwargs)
        finally:
            reading.partition = None

    Table.all_items = all_items  # type: ignore[method-assign]  # patching moto
    Table.query = query  # type: ignore[method-assign]  # patching moto


def make_item_operations_atomic(patch: Callable[[Any, str, Any], None] = setattr) -> None:
    """DynamoDB applies each write and each transaction atomically and isolated. moto answers requests on threads
    without a lock: a condition can pass in two requests at once, and a transaction whose condition fails puts back
    what it touched, erasing other requests' writes made meanwhile (a chunk's claim vanished under a concurrent failed
    claim of another job's chunk, and the chunk was sent twice). One lock around every item operation makes them
    behave as DynamoDB's do. The lock also covers writing the answer (the request handler): moto serialises the live
    item after the backend returns, and a write meanwhile broke the answer (``dictionary changed size during
    iteration``, or an item botocore could not parse: a 500 from the API).

    The local AWS process patches for good (``setattr``); a test that races conditional writes on the in-process
    moto passes ``monkeypatch.setattr``, which undoes it after the test."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler

    lock = threading.RLock()
    names = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item", "query", "scan")
    handler_names = (*names, "batch_get_item", "batch_write_item", "transact_get_items")
    for cls, methods in ((DynamoDBBackend, names), (DynamoHandler, handler_names)):
        for name in methods:
            real = getattr(cls, name)

            def atomic(self: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
                with lock:
                    return _real(self, *args, **kwargs)

            patch(cls, name, atomic)
