"""What happens to records as they age: retention policies, the archive of ended runs and
restoring runs from it; backups, restores and recovery mode.

- :mod:`.retention`: how long ended runs stay live and how long keys are remembered;
- :mod:`.archive_format`: the archive on disk (gzip JSON Lines per table per batch, a
  manifest with row counts and sha256 checksums), readable without openseal;
- :mod:`.archive`: archiving in batches (write, verify, then delete), resuming after a
  crash, restoring and reading runs back;
- :mod:`.backup`: backups of the embedded SQLite store, checking one, restoring it;
- :mod:`.recovery`: recovery mode after a restore (invariant 18): nothing is claimed or sent
  until every action that could have moved since the backup point is looked up by its key.
"""
