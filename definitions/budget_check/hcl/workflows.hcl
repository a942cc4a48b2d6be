workflow "confirm_budget" {
  description = "Finance's side of a budget request: one check, one answer."
  owner       = agent.finance
  start       = state.check

  input "amount" {
    type = number
  }

  input "cost_center" {
    type = string
  }

  output "approved" {
    type  = bool
    value = state.check.output.approved
  }

  output "remaining" {
    type  = number
    value = state.check.output.remaining
  }

  state "check" {
    turn {
      agent  = agent.finance
      goal   = "Is ${input.amount} EUR within the budget of cost center ${input.cost_center}?"
      output = object({ approved = bool, remaining = number })
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}

workflow "buy_with_budget" {
  description = "Pick a vendor, ask finance to confirm the budget, then finish or stop."
  owner       = agent.purchaser
  start       = state.pick

  input "request" {
    type = object({ item = string, quantity = number, cost_center = string })
  }

  output "vendor" {
    type  = string
    value = state.pick.output.vendor
  }

  state "pick" {
    turn {
      agent  = agent.purchaser
      goal   = "Pick a vendor for ${input.request.quantity} ${input.request.item}"
      output = object({ vendor = string, total = number })
    }
    next = state.budget
  }

  state "budget" {
    delegate {
      to         = agent.finance
      goal       = "Confirm the budget for ${state.pick.output.total} EUR"
      input      = { amount = state.pick.output.total, cost_center = input.request.cost_center }
      output     = object({ approved = bool, remaining = number })
      expires_in = "24h"
    }
    next = state.decide
    on "declined" {
      next = state.stopped
    }
    on "failed" {
      next = state.stopped
    }
    on "expired" {
      next = state.stopped
    }
  }

  state "decide" {
    decision {}
    branch {
      when = state.budget.output.approved
      next = state.done
    }
    branch {
      next = state.stopped
    }
  }

  state "done" {
    end = "completed"
  }

  state "stopped" {
    end = "failed"
  }
}
