agent "a" {
  model        = model.m
  instructions = "one"
  instructions = "two"
}
