# A capped workflow whose runs wait (for an event, for a timer) or just work: a run woken by
# what it waited for may find the cap full when it is claimed to continue.

model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

workflow "awaited" {
  owner       = agent.clerk
  start       = state.route
  concurrency = 1

  input "mode" {
    type = string
  }

  input "key" {
    type    = string
    default = ""
  }

  state "route" {
    decision {}
    branch {
      when = input.mode == "event"
      next = state.listen
    }
    branch {
      when = input.mode == "timer"
      next = state.nap
    }
    branch {
      next = state.work
    }
  }

  state "listen" {
    wait {
      event       = "go"
      correlation = { key = input.key }
    }
    next = state.done
  }

  state "nap" {
    wait {
      timer = "1h"
    }
    next = state.done
  }

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
