# Model profiles. The quickstart uses the deterministic scripted provider so
# nothing needs an API key; switch `provider` to "openai" for a real endpoint.
model "procurement_default" {
  provider   = "scripted"
  model      = "scripted-procurement"
  parameters = { temperature = 0 }
}
