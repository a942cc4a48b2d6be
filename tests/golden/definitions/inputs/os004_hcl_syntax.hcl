skill "s" {
  description = "d",
  effect      = "read"
}
