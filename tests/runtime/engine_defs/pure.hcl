# Workflows of pure states only (transform, decision, end): executed in the commit that saves them.

model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

workflow "tally" {
  owner = agent.clerk
  start = state.count
  input "n" {
    type = number
  }
  state "count" {
    transform {
      output = { total = input.n * 2 }
    }
    next = state.check
  }
  state "check" {
    decision {}
    branch {
      when = state.count.output.total > 10
      next = state.big
    }
    branch {
      next = state.small
    }
  }
  state "big" {
    transform {
      output = { size = "big" }
    }
    next = state.done
  }
  state "small" {
    transform {
      output = { size = "small" }
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
