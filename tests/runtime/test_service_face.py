"""The service face is lazy, and its one list of names is whole: every name it exports
resolves, from the module its ``TYPE_CHECKING`` imports name."""

from __future__ import annotations

import importlib

import pytest

from openseal.runtime import service
from openseal.runtime.service import _sources


def test_every_exported_name_resolves_from_the_module_its_import_names() -> None:
    sources = _sources()
    assert set(sources) == set(service.__all__)
    for name, (module, attribute) in sources.items():
        value = getattr(service, name)
        if module == service.__name__:
            assert value is importlib.import_module(f"{module}.{attribute}")
        else:
            assert value is getattr(importlib.import_module(module), attribute)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_function"):
        service.no_such_function  # noqa: B018
