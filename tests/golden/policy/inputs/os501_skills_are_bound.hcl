# The researcher role is not granted `search`: the grant to the whole team
# does not cover its roles. The team acting as a whole is not granted `order`:
# the grant to its buyer role does not cover the team.
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "researcher" {
  model        = model.m
  instructions = "Research."
  max_risk     = "read"
}

agent "buyer" {
  model        = model.m
  instructions = "Buy."
  max_risk     = "external"
}

team "shop" {
  role "researcher" {
    agent = agent.researcher
  }
  role "buyer" {
    agent = agent.buyer
  }
}

skill "search" {
  description = "Search."
  effect      = "read"
  input       = object({ q = string })
  adapter "python" {
    entry_point = "shop:search"
  }
}

skill "order" {
  description = "Order."
  effect      = "external"
  input       = object({ item = string })
  adapter "python" {
    entry_point = "shop:order"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
}

binding "team_searches" {
  skill = skill.search
  to    = team.shop
}

binding "buyer_orders" {
  skill = skill.order
  to    = team.shop.role.buyer
}

workflow "buy" {
  owner = team.shop
  start = state.research

  state "research" {
    turn {
      agent  = team.shop.role.researcher
      goal   = "Find an offer."
      skills = [skill.search]
      output = object({ item = string })
    }
    next = state.draft
  }

  state "draft" {
    proposal "order" {
      skill = skill.order
      args  = { item = state.research.output.item }
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
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
