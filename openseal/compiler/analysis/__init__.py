"""Analysis: decoded definitions checked as a whole and built into graphs.

Owns the symbol table and reference checks (``resolve``, ``expression_scopes``,
``grants``), static types (``typecheck``, ``infer``), the graphs and step DAGs
(``build`` into ``ir``), the checks that run over them (``checks``), the
declarations of the built-in runbook steps (``builtin_steps``), and lowering
runbooks into the plan the executor runs: ``runbook`` definitions
(``runbook_plan``) and the peer system's node/edge files (``node_edge_plan``).
"""
