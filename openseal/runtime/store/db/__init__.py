"""The database room of the store: connections and dialects, the statement layer, group commit,
the PostgreSQL listener and the wake-ups between processes. It knows SQL and drivers, never a
table of openseal's (that is :mod:`openseal.runtime.store.tables`)."""
