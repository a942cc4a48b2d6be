"""The compiler's face: each name it lists resolves from the module its import names, and
importing the face imports none of the stages behind it."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from openseal import compiler
from openseal.lazy_exports import face_sources


def test_every_name_resolves_from_the_module_its_import_names() -> None:
    assert compiler.__file__ is not None
    sources = face_sources(compiler.__file__)
    assert {"compile_paths", "write_bundle", "render_human", "diff_documents", "to_mermaid"} <= set(
        sources
    )
    for name, (module, attribute) in sources.items():
        source = importlib.import_module(module)
        expected = getattr(source, attribute, None) or importlib.import_module(
            f"{module}.{attribute}"
        )
        assert getattr(compiler, name) is expected, name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="load_hcl"):
        compiler.load_hcl  # noqa: B018


def test_the_face_alone_imports_no_stage_and_a_name_only_its_module() -> None:
    script = (
        "import sys, json\n"
        "import openseal.compiler\n"
        "before = sorted(m for m in sys.modules if m.startswith('openseal.compiler.'))\n"
        "from openseal.compiler import evaluate\n"
        "after = sorted(m for m in sys.modules if m.startswith('openseal.compiler.'))\n"
        "print(json.dumps([before, 'openseal.compiler.pipeline' in after]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout) == [[], False]
