# Skills under a concurrency cap: `submit` lets two actions be in flight to its destination at
# once, `fragile` one, and a call whose outcome is unknown it cannot reconcile (no lookup, no
# same-key retry) needs an operator; `look`, a read a turn calls, one.

model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

skill "submit" {
  description = "Submit an order to a slow destination."
  effect      = "write"
  input       = object({ q = string })
  output      = object({ answer = string })
  timeout     = "30s"
  concurrency = 2
  adapter "python" {
    entry_point = "tests.runtime.capacity_skills:submit"
  }
  idempotency {
    same_key_retry = true
  }
}

skill "fragile" {
  description = "Submit an order whose reply may be lost."
  effect      = "write"
  input       = object({ q = string })
  output      = object({ answer = string })
  timeout     = "30s"
  concurrency = 1
  adapter "python" {
    entry_point = "tests.runtime.capacity_skills:fragile"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
}

skill "look" {
  description = "Look an order up at a destination that answers one caller at a time."
  effect      = "read"
  input       = object({ q = string })
  output      = object({ answer = string })
  concurrency = 1
  adapter "python" {
    entry_point = "tests.runtime.capacity_skills:look"
  }
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
  max_risk     = "write"
}

binding "clerk_submits" {
  skill = skill.submit
  to    = agent.clerk
}

binding "clerk_looks" {
  skill = skill.look
  to    = agent.clerk
}

binding "clerk_submits_fragile" {
  skill = skill.fragile
  to    = agent.clerk
}

workflow "orders" {
  owner = agent.clerk
  start = state.submit
  input "n" {
    type = number
  }
  state "submit" {
    action {
      skill = skill.submit
      args  = { q = "order-${input.n}" }
    }
    next = state.done
    on "failed" { next = state.done }
  }
  state "done" {
    end = "completed"
  }
}

workflow "fragile_orders" {
  owner = agent.clerk
  start = state.submit
  input "n" {
    type = number
  }
  state "submit" {
    action {
      skill = skill.fragile
      args  = { q = "order-${input.n}" }
    }
    next = state.done
    on "failed" { next = state.done }
  }
  state "done" {
    end = "completed"
  }
}

workflow "looks" {
  owner = agent.clerk
  start = state.ask
  input "n" {
    type = number
  }
  state "ask" {
    turn {
      agent  = agent.clerk
      goal   = "Look order ${input.n} up"
      skills = [skill.look]
      output = object({ done = bool })
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
