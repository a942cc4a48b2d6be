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

# Credentials recognised by their shape, wherever the text is: a project key,
# a Slack webhook and an AWS key pair in instructions, a password in a URL.
# Prose about secrets and templated values are fine.
agent "poster" {
  model        = model.m
  instructions = <<-EOT
    Never ask the user for their password or token.
    Post results to https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx
    Use AWS key AKIAIOSFODNN7EXAMPLE with aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
  EOT
}

model "shaped" {
  provider   = "openai"
  base_url   = "https://models.example.org/v1"
  model      = "small"
  credential = "model_key"
  parameters = { user = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" }
}

skill "upload" {
  description = "Upload."
  effect      = "read"
  input       = object({ user = string })
  credential  = "upload_key"
  adapter "http" {
    method  = "POST"
    url     = "https://bot:hunter22@upload.example.org/send"
    headers = { X-User = "https://${args.user}@upload.example.org" }
  }
}
