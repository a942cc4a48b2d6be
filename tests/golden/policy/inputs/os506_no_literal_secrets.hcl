# Literal secrets in a model's parameters, a header and a request body; the
# credential reference and the templated header are fine.
model "m" {
  provider   = "openai"
  base_url   = "https://models.example.org/v1"
  model      = "small"
  credential = "model_key"
  parameters = { temperature = 0, api_key = "sk-live-123" }
}

skill "notify" {
  description = "Notify."
  effect      = "read"
  input       = object({ token = string })
  credential  = "notify_key"
  adapter "http" {
    method = "POST"
    url    = "https://notify.example.org/send"
    headers = {
      Authorization = "Bearer abc123"
      X-Session     = "${args.token}"
      X-Api-Token   = args.token
    }
    body = { message = "hello", password = "hunter2", token = args.token }
  }
}
