"""What happens to records as they age: retention policies, the archive of ended runs and
restoring runs from it.

- :mod:`.retention`: how long ended runs stay live and how long keys are remembered;
- :mod:`.archive_format`: the archive on disk (gzip JSON Lines per table per batch, a
  manifest with row counts and sha256 checksums), readable without openseal;
- :mod:`.archive`: archiving in batches (write, verify, then delete), resuming after a
  crash, restoring and reading runs back.
"""
