# Workflows under concurrency caps: a turn state (executed after the claim commits, so a
# claim holds its slot while the turn runs) then an end.

model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

agent "porter" {
  model        = model.scripted
  instructions = "Answer with JSON only."
  concurrency  = 1
}

workflow "capped" {
  owner       = agent.clerk
  start       = state.work
  concurrency = 2
  state "work" {
    turn {
      agent  = agent.clerk
      goal   = "work"
      output = object({ done = bool })
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}

workflow "carried" {
  owner = agent.porter
  start = state.work
  state "work" {
    turn {
      agent  = agent.porter
      goal   = "carry"
      output = object({ done = bool })
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}

workflow "free" {
  owner = agent.clerk
  start = state.work
  state "work" {
    turn {
      agent  = agent.clerk
      goal   = "free"
      output = object({ done = bool })
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}
