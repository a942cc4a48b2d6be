# A runbook runs in one process with nobody to approve, so it cannot send.
skill "fetch" {
  description = "Fetch."
  effect      = "read"
  output      = object({ body = string })
  adapter "python" {
    entry_point = "web:fetch"
  }
}

skill "send" {
  description = "Send an email."
  effect      = "external"
  input       = object({ body = string })
  adapter "python" {
    entry_point = "mail:send"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
  approval {
    required = true
  }
}

runbook "digest" {
  step "fetch" {
    skill = skill.fetch
  }
  step "send" {
    skill = skill.send
    args  = { body = step.fetch.output.body }
  }
}
