agnet "a" {
  model = model.m
}
