# Writing without an idempotency key or a lookup: an ambiguous outcome
# could never be reconciled. The read skill needs nothing.
skill "save_note" {
  description = "Save a note."
  effect      = "write"
  adapter "python" {
    entry_point = "notes:save"
  }
}

skill "delete_note" {
  description = "Delete a note."
  effect      = "destructive"
  adapter "python" {
    entry_point = "notes:delete"
  }
  idempotency {
    same_key_retry = false
  }
}

skill "read_note" {
  description = "Read a note."
  effect      = "read"
  adapter "python" {
    entry_point = "notes:read"
  }
}
