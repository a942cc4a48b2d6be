"""The service face and the store package are lazy, and each one's list of names is whole:
every name it exports resolves, from the module its ``TYPE_CHECKING`` imports name."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from openseal.lazy_exports import face_sources
from openseal.runtime import service, store

FACES = [service, store]


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_every_exported_name_resolves_from_the_module_its_import_names(face: ModuleType) -> None:
    assert face.__file__ is not None
    sources = face_sources(face.__file__)
    assert set(sources) == set(face.__all__)
    for name, (module, attribute) in sources.items():
        value = getattr(face, name)
        if module == face.__name__:
            assert value is importlib.import_module(f"{module}.{attribute}")
        else:
            assert value is getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_an_unknown_name_is_an_attribute_error(face: ModuleType) -> None:
    with pytest.raises(AttributeError, match="no_such_function"):
        face.no_such_function  # noqa: B018
