# Runs whose end settles something in the same transaction: a child's end settles its parent's
# join (all, any, or two of three), a failed run's end creates its objective's next run. A
# "slow" job and every "flaky" run end after a one-second timer, in a turn of their own (the
# worker holds their lease then); a "done" job ends in the claim that starts it.

model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

workflow "job" {
  owner = agent.clerk
  start = state.route
  input "n" {
    type = number
  }
  input "mode" {
    type = string
  }
  output "doubled" {
    value = input.n * 2
  }
  state "route" {
    decision {}
    branch {
      when = input.mode == "slow"
      next = state.nap
    }
    branch {
      next = state.finished
    }
  }
  state "nap" {
    wait {
      timer = "1s"
    }
    next = state.finished
  }
  state "finished" {
    end = "completed"
  }
}

workflow "all_of" {
  owner = agent.clerk
  start = state.fan
  input "modes" {
    type = list(string)
  }
  state "fan" {
    spawn {
      child "a" {
        workflow = "job"
        input    = { n = 1, mode = input.modes[0] }
      }
      child "b" {
        workflow = "job"
        input    = { n = 2, mode = input.modes[1] }
      }
      child "c" {
        workflow = "job"
        input    = { n = 3, mode = input.modes[2] }
      }
      join = "all"
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}

workflow "any_of" {
  owner = agent.clerk
  start = state.fan
  input "modes" {
    type = list(string)
  }
  state "fan" {
    spawn {
      child "a" {
        workflow = "job"
        input    = { n = 1, mode = input.modes[0] }
      }
      child "b" {
        workflow = "job"
        input    = { n = 2, mode = input.modes[1] }
      }
      child "c" {
        workflow = "job"
        input    = { n = 3, mode = input.modes[2] }
      }
      join = "any"
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}

workflow "two_of" {
  owner = agent.clerk
  start = state.fan
  input "modes" {
    type = list(string)
  }
  state "fan" {
    spawn {
      child "a" {
        workflow = "job"
        input    = { n = 1, mode = input.modes[0] }
      }
      child "b" {
        workflow = "job"
        input    = { n = 2, mode = input.modes[1] }
      }
      child "c" {
        workflow = "job"
        input    = { n = 3, mode = input.modes[2] }
      }
      join   = "quorum"
      quorum = 2
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}

workflow "flaky" {
  owner = agent.clerk
  start = state.nap
  objective {
    retry {
      max_attempts = 3
      backoff      = "1s"
      max_backoff  = "1s"
    }
  }
  state "nap" {
    wait {
      timer = "1s"
    }
    next = state.broken
  }
  state "broken" {
    end = "failed"
  }
}
