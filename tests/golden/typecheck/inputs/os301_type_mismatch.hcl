# Values that do not fit where they are used.
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
  input       = object({ vendor = string, quantity = number, currency = string })
  adapter "http" {
    url  = "https://shop.example.org/orders"
    body = args
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
}

binding "buyer_orders" {
  skill       = skill.order
  to          = agent.buyer
  constraints = [args.quantity, args.currency == "EUR"]
}

workflow "buy" {
  owner = agent.buyer
  start = state.research

  input "request" {
    type    = object({ item = string, quantity = number, tags = list(string) })
    default = { item = "laptop", quantity = "ten", tags = [] }
  }

  state "research" {
    turn {
      agent  = agent.buyer
      goal   = "Buy ${input.request.quantity} ${input.request.item} tagged ${input.request.tags}"
      output = object({ vendor = string, unit_price = number })
    }
    next = state.check
  }

  state "check" {
    decision {}
    branch {
      when = input.request.quantity
      next = state.draft
    }
    branch {
      when = input.request.item * 2 > state.research.output.unit_price
      next = state.draft
    }
    branch {
      next = state.done
    }
  }

  state "draft" {
    proposal "order" {
      skill = skill.order
      args = {
        vendor   = state.research.output.vendor
        quantity = state.research.output.vendor
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
