skill "s" {
  description = "d"
  effect      = "wirte"
  adapter "python" {
    entry_point = "m:f"
  }
}
