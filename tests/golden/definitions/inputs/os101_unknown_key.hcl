skill "s" {
  description = "d"
  effect      = "read"
  adaptor "python" {
    entry_point = "m:f"
  }
}
