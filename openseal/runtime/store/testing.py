"""The store's face for crash tests: the named points where a test can stop a process, and
the hooks that stop it there (:mod:`openseal.runtime.faults` arms them from the environment).

- group commit: :data:`BATCH_POINTS`, a :data:`BatchHook` given to ``GroupCommit``;
- fenced transactions: :data:`COMMIT_POINTS`, the hook at ``store.leases.commit_hook``;
- deliveries of inbound events: :data:`RECEIVE_POINTS`, a :data:`ReceiveHook`.

Lazy like the store's own face: the names under ``TYPE_CHECKING`` are its one list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openseal.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openseal.runtime.store.db.group_commit import BATCH_POINTS as BATCH_POINTS
    from openseal.runtime.store.db.group_commit import BatchHook as BatchHook
    from openseal.runtime.store.repos.fenced import COMMIT_POINTS as COMMIT_POINTS
    from openseal.runtime.store.repos.inbound_events import RECEIVE_POINTS as RECEIVE_POINTS
    from openseal.runtime.store.repos.inbound_events import ReceiveHook as ReceiveHook

__getattr__ = lazy_exports(__name__, __file__)
