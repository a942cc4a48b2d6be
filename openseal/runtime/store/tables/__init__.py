"""The tables room of the store: the schema, its migrations, the frozen records rows become,
the values columns hold, list filters, and the reads that need no SQLAlchemy. It builds on
:mod:`openseal.runtime.store.db` and never calls a repository."""
