# Workflows exercising timer waits, delegation, parallel branches and for_each.

model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

agent "helper" {
  model        = model.scripted
  instructions = "Help."
}

workflow "nap" {
  owner = agent.clerk
  start = state.sleep

  state "sleep" {
    wait {
      timer = "1h"
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}

workflow "ask_helper" {
  owner = agent.clerk
  start = state.delegate

  state "delegate" {
    delegate {
      to     = agent.helper
      goal   = "Count the laptops"
      output = object({ count = number })
    }
    next = state.done
    on "declined" {
      next = state.refused
    }
  }

  state "done" {
    end = "completed"
  }

  state "refused" {
    end = "canceled"
  }
}

workflow "ask_reviewed" {
  owner = agent.clerk
  start = state.delegate

  state "delegate" {
    delegate {
      to         = agent.helper
      goal       = "Count the laptops"
      output     = object({ count = number })
      review     = true
      expires_in = "1h"
    }
    next = state.done
    on "expired" {
      next = state.late
    }
  }

  state "done" {
    end = "completed"
  }

  state "late" {
    end = "failed"
  }
}

workflow "fan" {
  owner = agent.clerk
  start = state.both

  input "items" {
    type = list(number)
  }

  state "both" {
    parallel {
      branch "left" {
        turn {
          agent  = agent.clerk
          goal   = "left"
          output = object({ side = string })
        }
      }
      branch "right" {
        transform {
          output = "right"
        }
      }
    }
    next = state.each
  }

  state "each" {
    for_each {
      items       = input.items
      concurrency = 2
      max_items   = 3
      do {
        transform {
          output = item * 10
        }
      }
    }
    next = state.done
    on "failed" {
      next = state.too_many
    }
  }

  state "done" {
    end = "completed"
  }

  state "too_many" {
    end = "failed"
  }
}

# A child job: completes (with its input doubled), fails, sleeps an hour first, or waits for
# an event that never comes.
workflow "job" {
  owner = agent.clerk
  start = state.route

  input "n" {
    type = number
  }

  input "mode" {
    type    = string
    default = "done"
  }

  output "doubled" {
    value = input.n * 2
  }

  state "route" {
    decision {}
    branch {
      when = input.mode == "fail"
      next = state.broken
    }
    branch {
      when = input.mode == "slow"
      next = state.nap
    }
    branch {
      when = input.mode == "hang"
      next = state.hang
    }
    branch {
      next = state.finished
    }
  }

  state "hang" {
    wait {
      event = "job.never"
    }
    next = state.finished
  }

  state "nap" {
    wait {
      timer = "1h"
    }
    next = state.finished
  }

  state "finished" {
    end = "completed"
  }

  state "broken" {
    end = "failed"
  }
}

# Three jobs joined by quorum (`needed` of them); `modes` says how each ends.
workflow "gather" {
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
      join       = "quorum"
      quorum     = 2
      expires_in = "2h"
    }
    next = state.sum
    on "failed" {
      next = state.failed
    }
    on "expired" {
      next = state.expired
    }
  }

  state "sum" {
    transform {
      output = state.fan.output.completed
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }

  state "failed" {
    end = "failed"
  }

  state "expired" {
    end = "failed"
  }
}
