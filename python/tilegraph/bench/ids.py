"""How benchmark IDs are made, and the promise they keep.

A benchmark's ID is what links its results across commits (the dashboard's series,
`compare`'s rows), so it must not move when nothing about the benchmark changed:

* A leaf definition (Model, CompileConfig, RunConfig, DeviceSpec) carries a fixed,
  hand-written ID in the catalog. Renaming, re-tagging or re-describing a leaf keeps it;
  giving an ID to a different thing is a deliberate act, visible in review.
* A composite (a compile benchmark, a run benchmark) has an ID hashed from its parts'
  IDs in a fixed, explicitly listed order, plus those of its own fields whose values
  differ from their defaults. So a new optional field, left at its default, does not
  change any existing ID.

Nothing here depends on Python's ``hash()`` (salted per process) or on dict order.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Iterable

HASH_CHARS = 12  # 48 bits: collisions are negligible for thousands of benchmarks
_SEPARATOR = "\x1f"  # cannot appear in an ID or a repr of a plain value by accident


def stable_hash(kind: str, parts: Iterable[str]) -> str:
    """The first HASH_CHARS hex digits of sha256 over KIND and PARTS, in order."""
    text = _SEPARATOR.join([kind, *parts])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def field_default(field: dataclasses.Field) -> Any:
    """A dataclass field's default value, or dataclasses.MISSING when it is required."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def non_default_fields(obj: Any, exclude: Iterable[str] = ()) -> list[tuple[str, Any]]:
    """(name, value) of OBJ's dataclass fields that differ from their defaults, by name.

    Required fields (no default) always count. Sorted by name, so declaring fields in
    another order does not change what is hashed.
    """
    skip = set(exclude)
    out = []
    for f in dataclasses.fields(obj):
        if f.name in skip:
            continue
        value = getattr(obj, f.name)
        if value != field_default(f):
            out.append((f.name, value))
    return sorted(out)


def composite_id(prefix: str, kind: str, part_ids: Iterable[str], own_fields: Iterable[tuple[str, Any]]) -> str:
    """``PREFIX-<hash>`` of the parts' IDs (caller's fixed order) and NAME=repr(VALUE) pairs."""
    parts = list(part_ids) + [f"{name}={value!r}" for name, value in own_fields]
    return f"{prefix}-{stable_hash(kind, parts)}"
