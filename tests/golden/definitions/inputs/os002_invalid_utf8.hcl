agent "a" {
  model        = model.m
  instructions = "café"
}
