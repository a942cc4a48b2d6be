# An approver list names a token role that does not exist (misspelt), and a governance
# definition's reviewers name another; `role:decider` and plain principals are fine.
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "clerk" {
  model        = model.m
  instructions = "Draft orders."
  max_risk     = "external"
}

team "office" {
  role "clerk" {
    agent = agent.clerk
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

binding "clerk_orders" {
  skill = skill.order
  to    = team.office.role.clerk
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
      proposal  = proposal.order
      approvers = ["user:alice", "role:aprover"]
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
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}

governance "production" {
  reviewers = ["role:reviewers"]
  deciders  = ["user:carol", "role:decider"]
}
