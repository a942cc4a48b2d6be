"""Syntax: definition files as text, parsed into one spanned, format-neutral tree.

Owns reading files (``file_text``), source positions (``spans``), the HCL loader
and parser (``load_hcl``, ``hcl_parser``), the YAML loader (``load_yaml``), the
tree both loaders produce (``document_tree``) and folding that tree into plain
data (``fold``). Nothing here knows what a definition means; that is
:mod:`openseal.compiler.definitions`. A node/edge runbook file is loaded here
like any HCL file and lowered to a plan in :mod:`openseal.compiler.analysis`.
"""
