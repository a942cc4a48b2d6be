# Attributes a value does not have, and an argument the skill does not take.
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "buyer" {
  model        = model.m
  instructions = "Buy."
  max_risk     = "external"
}

skill "order" {
  description = "Order."
  effect      = "external"
  input       = object({ vendor = string, total = number })
  adapter "http" {
    url = "https://shop.example.org/orders/${action.keys}"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
}

binding "buyer_orders" {
  skill = skill.order
  to    = agent.buyer
}

workflow "buy" {
  owner = agent.buyer
  start = state.research

  input "request" {
    type = object({ item = string, quantity = number })
  }

  state "research" {
    turn {
      agent  = agent.buyer
      goal   = "Buy ${input.request.quantity} ${input.request.colour} ${input.request.item.name}"
      output = object({ vendor = string, unit_price = number })
    }
    next = state.draft
  }

  state "draft" {
    proposal "order" {
      skill = skill.order
      args = {
        vendor = state.research.output.vendor
        total  = state.research.output.price * input.request.quantity
        vendr  = "acme"
      }
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
