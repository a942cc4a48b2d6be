agent "a" {
  model        = model.m
  instructions = file("missing-prompt.md")
}
