# Three bindings that would widen what `send` allows.
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "sender" {
  model        = model.m
  instructions = "Send."
  max_risk     = "destructive"
}

skill "send" {
  description = "Send an email."
  effect      = "external"
  adapter "python" {
    entry_point = "mail:send"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
  approval {
    required   = true
    expires_in = "24h"
  }
}

binding "riskier" {
  skill    = skill.send
  to       = agent.sender
  max_risk = "production"
}

binding "no_approval" {
  skill = skill.send
  to    = agent.sender
  approval {
    required = false
  }
}

binding "longer_approval" {
  skill = skill.send
  to    = agent.sender
  approval {
    expires_in = "72h"
  }
}

binding "narrower" {
  skill    = skill.send
  to       = agent.sender
  max_risk = "external"
  approval {
    expires_in = "1h"
  }
}
