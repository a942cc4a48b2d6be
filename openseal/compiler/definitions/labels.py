"""How many labels an HCL block takes, read from the definition model.

Folding turns labels into nested keys (``state "draft" {..}`` is
``{"state": {"draft": {..}}}``), so a missing or extra label silently shifts
every key below it and decoding then reports the shifted keys. Folding asks
:func:`block_labels` first and reports the label itself instead:

* a block at the top of a file is a definition and takes exactly one label,
  its name (``agent "researcher" {..}``);
* a block whose field holds named entries (``state``, ``input``, ``step``,
  ``role``, ``on``, a parallel state's ``branch`` …: a mapping of name to
  block) needs at least one label, the name.

Other blocks are left to decoding: ``adapter "http" {..}`` and
``adapter { http {..} }`` mean the same, so a label there is neither required
nor refused.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from openseal.compiler.definitions.specs import KIND_MODELS


@dataclass(frozen=True, slots=True)
class Labels:
    """The labels a block takes: at least ``least``, at most ``most`` (``None``: no limit)."""

    least: int
    most: int | None


_DEFINITION = Labels(1, 1)
_NAMED = Labels(1, None)


def block_labels(path: tuple[str | int, ...], block_type: str) -> Labels | None:
    """The labels a ``block_type`` block written at data ``path`` takes, if the model says.

    ``path`` is where the block's parent body sits in the folded data: ``()`` at
    the top of a file, ``("workflow", "w", "state", "draft")`` inside a state.
    """
    if not path:
        return _DEFINITION if block_type in KIND_MODELS else None
    model = KIND_MODELS.get(str(path[0]))
    if model is None or len(path) < 2:
        return None
    return _field_labels(model, tuple(str(p) for p in path[2:]), block_type)


@functools.lru_cache(maxsize=1024)  # a few hundred distinct places in the whole model
def _field_labels(model: type[BaseModel], inner: tuple[str, ...], block_type: str) -> Labels | None:
    annotation: Any = model
    for part in inner:
        annotation = _step(annotation, part)
        if annotation is None:
            return None
    field = _step(annotation, block_type)
    if field is None:
        return None
    field = unwrap(field)
    if typing.get_origin(field) is dict:
        value = unwrap(typing.get_args(field)[1])
        if isinstance(value, type) and issubclass(value, BaseModel):
            return _NAMED
    return None


def _step(annotation: Any, part: str) -> Any:
    """The annotation one key further in: a model's field, a mapping's value, a list's item."""
    annotation = unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        info = annotation.model_fields.get(part)
        return info.annotation if info else None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        return args[1]
    if origin is list and args:
        # A block written again is an item (by index); written once, it is the item itself.
        return args[0] if part.isdigit() else _step(args[0], part)
    return None


def unwrap(annotation: Any) -> Any:
    """``X | None`` and ``Annotated[X, ...]`` down to ``X``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation
