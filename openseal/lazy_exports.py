"""A package face whose public names are imported on first use.

The face lists its names once, as imports under ``TYPE_CHECKING`` (``X as X``, so type
checkers take each as exported, and under the name it has where it is defined: a face gives
no second name): type checkers read them, and :func:`lazy_exports` resolves each name from
them at run time, so importing the face imports none of the modules behind it. It imports
nothing of openseal, so any package may use it. In the face::

    if TYPE_CHECKING:
        from openseal.runtime.store.tables.records import Run as Run

    __getattr__ = lazy_exports(__name__, __file__)
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any


@cache
def face_sources(path: str) -> dict[str, tuple[str, str]]:
    """Each public name of the face whose file is ``path`` → (the module it comes from, its
    name there), read from the face's ``TYPE_CHECKING`` imports."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If))
    return {
        alias.asname or alias.name: (node.module or "", alias.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def lazy_exports(module_name: str, path: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the face ``module_name`` (whose file is ``path``)."""

    def __getattr__(name: str) -> Any:
        try:
            module, attribute = face_sources(path)[name]
        except KeyError:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}") from None
        if module == module_name:  # a submodule of the face (``service.workers``)
            value: Any = importlib.import_module(f"{module_name}.{attribute}")
        else:
            source = importlib.import_module(module)
            try:
                value = getattr(source, attribute)
            except AttributeError:  # a submodule of a package not imported yet (``lang.expr``)
                value = importlib.import_module(f"{module}.{attribute}")
        setattr(sys.modules[module_name], name, value)  # the next lookup does not come back
        return value

    return __getattr__
