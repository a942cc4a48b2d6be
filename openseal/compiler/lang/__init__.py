"""The expression and type language that definitions are written in.

Owns the expression grammar (``expressions.lark``), its two parsers (``expr_parse``
drives lark, ``expr_fast_parse`` is the hand-written fast path), the tree
(``expr_ast``), the printer (``expr_print``), syntax-error wording (``expr_errors``)
and their public face (``expr``); types (``types``, ``type_ast``) and what they
mean for values (``type_conformance``); the restricted evaluator (``evaluate``)
and its built-in functions (``functions``). The runtime and the runbook executor
evaluate compiled expressions with these same modules.
"""
