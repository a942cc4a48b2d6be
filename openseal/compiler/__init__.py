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
"""
