# `direct` sends an email with no proposal to approve; `shortcut` lets small
# orders skip the approval; `team_rule` writes a ledger entry, which the
# team's policy says needs approval, and never asks for one.
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "sender" {
  model        = model.m
  instructions = "Send."
  max_risk     = "external"
}

team "ops" {
  role "writer" {
    agent = agent.sender
  }
  policy {
    approval_required_from = "write"
  }
}

skill "send" {
  description = "Send an email."
  effect      = "external"
  input       = object({ to = string })
  adapter "python" {
    entry_point = "mail:send"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
}

skill "record" {
  description = "Write a ledger entry."
  effect      = "write"
  input       = object({ amount = number })
  adapter "python" {
    entry_point = "ledger:record"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
}

binding "sender_sends" {
  skill = skill.send
  to    = agent.sender
}

binding "ops_records" {
  skill = skill.record
  to    = team.ops
}

workflow "direct" {
  owner = agent.sender
  start = state.send

  state "send" {
    action {
      skill = skill.send
      args  = { to = "users@example.org" }
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}

workflow "shortcut" {
  owner = agent.sender
  start = state.draft

  input "to" {
    type = string
  }

  state "draft" {
    proposal "mail" {
      skill = skill.send
      args  = { to = input.to }
    }
    next = state.check
  }

  state "check" {
    decision {}
    branch {
      when = input.to == "team@example.org"
      next = state.submit
    }
    branch {
      next = state.review
    }
  }

  state "review" {
    approval {
      proposal = proposal.mail
    }
    on "approved" {
      next = state.submit
    }
    on "rejected" {
      next = state.done
    }
  }

  state "submit" {
    action {
      proposal = proposal.mail
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}

workflow "team_rule" {
  owner = team.ops
  start = state.draft

  state "draft" {
    proposal "entry" {
      skill = skill.record
      args  = { amount = 10 }
    }
    next = state.write
  }

  state "write" {
    action {
      proposal = proposal.entry
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
