workflow "procure_laptops" {
  description = "Compare approved vendors, draft an exact order, wait for the requester, submit it once."
  owner       = team.procurement
  start       = state.research

  input "request" {
    type = object({ item = string, quantity = number, budget = number })
  }

  output "order_id" {
    type  = string
    value = state.submit.output.order_id
  }

  budget {
    turns       = 10
    model_calls = 20
    tool_calls  = 20
  }

  state "research" {
    turn {
      agent  = team.procurement.role.researcher
      goal   = "Compare approved vendors for ${input.request.quantity} ${input.request.item}"
      skills = [skill.search_vendors]
      output = object({ vendor = string, unit_price = number, currency = string })
    }
    next = state.check_budget
  }

  state "check_budget" {
    decision {}
    branch {
      when = state.research.output.unit_price * input.request.quantity <= input.request.budget
      next = state.draft
    }
    branch {
      next = state.over_budget
    }
  }

  state "draft" {
    proposal "order" {
      skill = skill.submit_purchase_order
      actor = team.procurement.role.buyer
      args = {
        vendor      = state.research.output.vendor
        quantity    = input.request.quantity
        total       = state.research.output.unit_price * input.request.quantity
        currency    = state.research.output.currency
        destination = "O4"
      }
      spend {
        amount   = state.research.output.unit_price * input.request.quantity
        currency = state.research.output.currency
      }
    }
    next = state.review
  }

  state "review" {
    approval {
      proposal   = proposal.order
      approvers  = ["requester"]
      expires_in = "72h"
    }
    on "approved" {
      next = state.submit
    }
    on "rejected" {
      next = state.rejected
    }
    on "changes_requested" {
      next = state.research
    }
    on "expired" {
      next = state.rejected
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

  state "rejected" {
    end = "canceled"
  }

  state "over_budget" {
    end = "failed"
  }
}
