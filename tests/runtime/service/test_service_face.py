"""The service face and the store's faces are lazy, and each one's list of names is whole and
said once: every name it exports resolves, from the module its ``TYPE_CHECKING`` imports name,
under the name it has there."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from openseal.lazy_exports import face_sources
from openseal.runtime import service, store
from openseal.runtime.store import testing

FACES = [service, store, testing]


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_every_exported_name_resolves_from_the_module_its_import_names(face: ModuleType) -> None:
    assert face.__file__ is not None
    sources = face_sources(face.__file__)
    assert sources
    for name, (module, attribute) in sources.items():
        value = getattr(face, name)
        if module == face.__name__:
            assert value is importlib.import_module(f"{module}.{attribute}")
        else:
            assert value is getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_a_face_gives_no_name_a_second_name_nor_lists_its_names_twice(face: ModuleType) -> None:
    assert face.__file__ is not None
    renamed = {
        name: f"{module}.{attribute}"
        for name, (module, attribute) in face_sources(face.__file__).items()
        if name != attribute
    }
    assert renamed == {}
    assert "__all__" not in vars(face)


@pytest.mark.parametrize("face", FACES, ids=lambda face: face.__name__)
def test_an_unknown_name_is_an_attribute_error(face: ModuleType) -> None:
    with pytest.raises(AttributeError, match="no_such_function"):
        face.no_such_function  # noqa: B018


def test_crash_test_hooks_are_on_the_testing_face_only() -> None:
    assert store.__file__ is not None and testing.__file__ is not None
    hooks = {"BATCH_POINTS", "BatchHook", "COMMIT_POINTS", "RECEIVE_POINTS", "ReceiveHook"}
    assert set(face_sources(testing.__file__)) == hooks
    assert hooks.isdisjoint(face_sources(store.__file__))
