# The clerk's agent may only read, but drafts an order (external). The
# reviewer's binding caps `publish` at `write`, but publishing is external.
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "clerk" {
  model        = model.m
  instructions = "Draft orders."
  max_risk     = "read"
}

agent "reviewer" {
  model        = model.m
  instructions = "Publish."
  max_risk     = "destructive"
}

team "office" {
  role "clerk" {
    agent = agent.clerk
  }
  role "reviewer" {
    agent = agent.reviewer
  }
}

skill "order" {
  description = "Order."
  effect      = "external"
  input       = object({ item = string })
  adapter "python" {
    entry_point = "office:order"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
}

skill "publish" {
  description = "Publish."
  effect      = "external"
  adapter "python" {
    entry_point = "office:publish"
  }
  idempotency {
    same_key_retry = true
  }
}

binding "clerk_orders" {
  skill = skill.order
  to    = team.office.role.clerk
}

binding "reviewer_publishes" {
  skill    = skill.publish
  to       = team.office.role.reviewer
  max_risk = "write"
}

workflow "procure" {
  owner = team.office
  start = state.draft

  state "draft" {
    proposal "order" {
      skill = skill.order
      actor = team.office.role.clerk
      args  = { item = "laptop" }
    }
    next = state.review
  }

  state "review" {
    approval {
      proposal = proposal.order
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
      proposal = proposal.order
    }
    next = state.announce
  }

  state "announce" {
    proposal "news" {
      skill = skill.publish
      actor = team.office.role.reviewer
    }
    next = state.approve_news
  }

  state "approve_news" {
    approval {
      proposal = proposal.news
    }
    on "approved" {
      next = state.publish
    }
    on "rejected" {
      next = state.done
    }
  }

  state "publish" {
    action {
      proposal = proposal.news
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
