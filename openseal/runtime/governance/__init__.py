"""The governance room: how definition changes become active versions.

``flow`` (deploy → change proposal → review → decision → activation), ``change_proposals``
(refusals and lookups), ``plan`` (what a change is diffed against), ``policy`` (which rules
govern a change) and ``queries`` (read-only views).
"""
