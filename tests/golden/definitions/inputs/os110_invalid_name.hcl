model "../../victim" {
  provider = "scripted"
  model    = "scripted-small"
}
