"""The compiler: definition files in, content-addressed compiled documents out.

Laid out as its pipeline, one folder per stage::

    syntax/       files → spanned document tree → folded data
    definitions/  folded data → the frozen definition model
    lang/         the expression and type language (used by every later stage)
    analysis/     resolve → typecheck → build graphs → checks; runbook plans
    output/       compiled documents, bundles, schemas, diffs, drawings, reports

At the top: ``driver`` (the one stage list and how far each command runs),
``pipeline`` (files → projects → the driver), ``load`` (finding files and the
front half of the stages), ``runbook_pipeline`` (a runbook file → its plan),
``cache`` (the signed compile cache) and ``diagnostics`` (what every stage reports).
The compiler is pure: it imports nothing of openseal's runtime, API or CLI.

This package is the compiler's face: outside the compiler, code imports only the names
below (``from openseal.compiler import compile_paths, write_bundle``), never a stage's module
(a test in ``tests/test_boundaries.py`` holds every module to that)::

    result = compile_paths([Path("definitions/procurement/hcl")])
    if result.ok:
        write_bundle(result, Path("build"))  # documents, and a manifest with source digests
    print(render_human(result.diagnostics, result.loaded.sources))

- compiling: :func:`compile_paths` (as far as a :class:`Stage`), :func:`write_bundle`,
  :func:`read_bundle`; a runbook file to its plan: :func:`prepare`;
- diagnostics and their renderings (human, JSON, SARIF, GitHub);
- migrations of waiting runs: :func:`check_migrations` (a workflow's ``migrate`` blocks
  against the compiled earlier versions), :func:`find_earlier`;
- comparing and drawing: :func:`diff_documents`, :func:`to_mermaid`, :func:`to_dot`,
  :func:`to_svg`; the JSON Schemas;
- the expression and type language the runtime and the runbook executor evaluate compiled
  documents with: :func:`evaluate`, and the modules ``expr``, ``types`` and ``functions``.

The face is lazy: a name's module is imported when the name is first used, so a worker that
only evaluates compiled expressions never imports the loaders, and ``openseal --help`` imports
nothing of the compiler. The imports under ``TYPE_CHECKING`` below are the face's one list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openseal.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openseal.compiler.analysis.builtin_steps import STEP_TYPES as STEP_TYPES
    from openseal.compiler.analysis.checks.policy import looks_secret as looks_secret
    from openseal.compiler.analysis.migration import check_migrations as check_migrations
    from openseal.compiler.analysis.migration import find_earlier as find_earlier
    from openseal.compiler.analysis.runbook_plan import Plan as Plan
    from openseal.compiler.analysis.runbook_plan import PlanStep as PlanStep
    from openseal.compiler.definitions.field_types import parse_duration as parse_duration
    from openseal.compiler.definitions.specs import EFFECT_ORDER as EFFECT_ORDER
    from openseal.compiler.definitions.specs import KIND_MODELS as KIND_MODELS
    from openseal.compiler.definitions.specs import Input as Input
    from openseal.compiler.diagnostics import Diagnostic as Diagnostic
    from openseal.compiler.diagnostics import Related as Related
    from openseal.compiler.diagnostics import did_you_mean as did_you_mean
    from openseal.compiler.diagnostics import has_errors as has_errors
    from openseal.compiler.driver import Stage as Stage
    from openseal.compiler.lang import expr as expr
    from openseal.compiler.lang import functions as functions
    from openseal.compiler.lang import types as types
    from openseal.compiler.lang.evaluate import EvaluationError as EvaluationError
    from openseal.compiler.lang.evaluate import evaluate as evaluate
    from openseal.compiler.lang.expr import Expression as Expression
    from openseal.compiler.output.bundle import Bundle as Bundle
    from openseal.compiler.output.bundle import BundleEntry as BundleEntry
    from openseal.compiler.output.bundle import BundleError as BundleError
    from openseal.compiler.output.bundle import is_bundle as is_bundle
    from openseal.compiler.output.bundle import read_bundle as read_bundle
    from openseal.compiler.output.diff import Change as Change
    from openseal.compiler.output.diff import DiffReport as DiffReport
    from openseal.compiler.output.diff import diff_documents as diff_documents
    from openseal.compiler.output.document import CompiledDocument as CompiledDocument
    from openseal.compiler.output.draw import Drawable as Drawable
    from openseal.compiler.output.draw import to_dot as to_dot
    from openseal.compiler.output.draw import to_mermaid as to_mermaid
    from openseal.compiler.output.draw import to_svg as to_svg
    from openseal.compiler.output.render_diagnostics import render_github as render_github
    from openseal.compiler.output.render_diagnostics import render_human as render_human
    from openseal.compiler.output.render_diagnostics import render_json as render_json
    from openseal.compiler.output.render_diagnostics import render_sarif as render_sarif
    from openseal.compiler.output.render_diagnostics import summary_line as summary_line
    from openseal.compiler.output.render_diagnostics import use_color as use_color
    from openseal.compiler.output.schemas import (
        compiled_document_schema as compiled_document_schema,
    )
    from openseal.compiler.output.schemas import definition_schemas as definition_schemas
    from openseal.compiler.output.schemas import write_schemas as write_schemas
    from openseal.compiler.pipeline import CompileResult as CompileResult
    from openseal.compiler.pipeline import compile_paths as compile_paths
    from openseal.compiler.pipeline import write_bundle as write_bundle
    from openseal.compiler.runbook_pipeline import Prepared as Prepared
    from openseal.compiler.runbook_pipeline import prepare as prepare
    from openseal.compiler.runbook_pipeline import project_root as project_root
    from openseal.compiler.syntax.spans import Span as Span

__getattr__ = lazy_exports(__name__, __file__)
