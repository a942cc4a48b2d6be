"""The one list of compiler stages, and how far each command runs down it.

Every command that compiles asks this module for a prefix of the stage list,
so no two commands can check definitions differently:

* ``validate --syntax-only`` stops at ``Stage.LOAD`` (read, parse, decode);
* ``graph`` and ``run`` stop at ``Stage.CHECK`` (every check of a project);
* ``validate``, ``compile``, ``diff`` and ``deploy`` go on to ``Stage.EMIT``
  (the documents; ``validate`` writes none, but a name defined differently
  in two projects shows only in their digests).

Loading (read, parse, fold, decode) works file by file and lives in
:mod:`openseal.compiler.load`; :func:`openseal.compiler.pipeline.compile_paths`
groups files into projects and calls :func:`compile_definitions` for each.
Emitting adds no diagnostic of its own: loading reports every value a document
could not carry.

>>> result = compile_definitions(definitions, through=Stage.CHECK)  # doctest: +SKIP
>>> [d.code for d in result.diagnostics]                            # doctest: +SKIP
['OS402']
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from openseal.compiler.definitions.decode import Definition
from openseal.compiler.diagnostics import Diagnostic, error, has_errors
from openseal.compiler.output.document import CompiledDocument

# Each stage imports its module when it first runs: a project served whole from
# the compile cache runs none, and `openseal validate` in a pre-commit hook
# should not pay for importing them (networkx alone is about 0.2 s).
if TYPE_CHECKING:
    from openseal.compiler.analysis.build import Graphs
    from openseal.compiler.analysis.ir import Analysis


class Stage(enum.IntEnum):
    """How far to compile; running to a stage runs every stage before it."""

    #: read, parse and decode each file; names defined twice
    LOAD = 1
    #: the symbol table; every reference checked
    RESOLVE = 2
    #: expression and argument types
    TYPECHECK = 3
    #: workflow state graphs and runbook step DAGs
    BUILD = 4
    #: graph checks, then authority and policy checks
    CHECK = 5
    #: one content-addressed document per definition (only when there is no error)
    EMIT = 6


@dataclass
class ProjectResult:
    """One project taken as far as it was asked to go."""

    definitions: Sequence[Definition]
    #: ``kind.name`` of definitions written in the project that did not decode
    broken: Collection[str] = ()
    #: a file of the project has a loading error: its documents are not emitted
    load_failed: bool = False
    diagnostics: list[Diagnostic] = field(default_factory=list)
    analysis: Analysis | None = None
    graphs: Graphs | None = None
    #: ``kind.name`` → document; filled by ``EMIT`` when no stage found an error
    documents: dict[str, CompiledDocument] = field(default_factory=dict)


def _resolve(project: ProjectResult) -> list[Diagnostic]:
    from openseal.compiler.analysis.resolve import resolve

    project.analysis, diagnostics = resolve(project.definitions, broken=project.broken)
    return diagnostics


def _typecheck(project: ProjectResult) -> list[Diagnostic]:
    from openseal.compiler.analysis.typecheck import typecheck

    assert project.analysis is not None
    return typecheck(project.analysis)


def _build(project: ProjectResult) -> list[Diagnostic]:
    from openseal.compiler.analysis.build import build

    assert project.analysis is not None
    project.graphs = build(project.analysis)
    return []


def _check(project: ProjectResult) -> list[Diagnostic]:
    from openseal.compiler.analysis.checks import GRAPH_CHECKS, POLICY_CHECKS

    assert project.analysis is not None and project.graphs is not None
    analysis, graphs = project.analysis, project.graphs
    found = [d for check in GRAPH_CHECKS for d in check(analysis, graphs)]
    # Authority and policy checks weigh definitions against each other (a grant
    # against a turn, a binding against its skill); with one of them missing
    # they would only report what follows from its errors.
    if not project.broken:
        found += [d for check in POLICY_CHECKS for d in check(analysis, graphs)]
    return found


def _emit(project: ProjectResult) -> list[Diagnostic]:
    from openseal.compiler.output.emit import UnwritableValue, emit

    assert project.analysis is not None and project.graphs is not None
    if project.load_failed or has_errors(project.diagnostics):
        return []
    try:
        project.documents = emit(project.analysis, project.graphs)
    except UnwritableValue as exc:
        # Loading reports every number a document cannot carry; should a value
        # still get through, it is a located error, never an empty report.
        return [error("OS104", exc.reason, exc.span)]
    return []


#: The stages after loading, in order. Loading is per file (see ``compile_paths``).
STAGES: tuple[tuple[Stage, Callable[[ProjectResult], list[Diagnostic]]], ...] = (
    (Stage.RESOLVE, _resolve),
    (Stage.TYPECHECK, _typecheck),
    (Stage.BUILD, _build),
    (Stage.CHECK, _check),
    (Stage.EMIT, _emit),
)


def compile_definitions(
    definitions: Sequence[Definition],
    *,
    through: Stage = Stage.EMIT,
    broken: Collection[str] = (),
    load_failed: bool = False,
) -> ProjectResult:
    """Run the stages after loading, up to and including ``through``, over one project.

    ``broken`` names (``kind.name``) definitions that were written but did not
    decode: references to them are not reported again as undefined.
    ``load_failed`` says loading reported an error, so nothing is emitted.
    Never raises for bad input.
    """
    project = ProjectResult(definitions, frozenset(broken), load_failed=load_failed)
    for stage, run in STAGES:
        if stage > through:
            break
        project.diagnostics += run(project)
    return project
