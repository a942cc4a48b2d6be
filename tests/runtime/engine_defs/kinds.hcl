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
