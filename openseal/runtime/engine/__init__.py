"""The engine room: claiming runs, executing their turns state by state, and what a turn uses.

``engine`` (claims, leases, the wake loop), ``worker`` (a worker process), ``turns`` (one
turn of one run), ``states/`` (one handler per state kind), ``tools`` and ``gateway`` (the
skill calls a model proposes), ``budgets``, ``delegation``
(child runs for agent requests) and ``triggers`` (schedules that start runs).
"""
