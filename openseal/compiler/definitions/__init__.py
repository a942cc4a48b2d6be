"""Definitions: folded data decoded into the frozen definition model.

Owns the model itself (``specs``: one frozen pydantic model per definition
kind), the field types that parse expressions, types and durations while they
validate (``field_types``), how many labels each block takes (``labels``) and
decoding with located diagnostics (``decode``).
"""
