"""The actions room: governed side effects from proposal to confirmed outcome.

``proposals`` (the exact payload, invariant 6), ``proposal_check`` (verifying it against its
hash), ``approvals`` (who may decide, and decisions), ``admission`` (the fenced transaction
that lets an action dispatch, invariant 7), ``dispatch`` (calling the skill), ``reconcile``
(recording outcomes and resolving unknown ones, invariants 8 and 14), ``replies`` and
``skill_documents``.
"""
