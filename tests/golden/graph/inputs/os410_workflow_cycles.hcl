# Workflows that start each other's runs in a cycle, with nothing bounding the depth.
model "m" {
  provider = "scripted"
  model    = "scripted-small"
}

agent "helper" {
  model        = model.m
  instructions = "Help."
  workflow     = "ask"
}

team "crew" {
  role "lead" {
    agent = agent.helper
  }
}

# w1 spawns w2, which spawns w1.
workflow "w1" {
  owner = agent.helper
  start = state.fan
  state "fan" {
    spawn {
      child "again" {
        workflow = "w2"
      }
    }
    on "done" { next = state.done }
  }
  state "done" {
    end = "completed"
  }
}

workflow "w2" {
  owner = agent.helper
  start = state.fan
  state "fan" {
    spawn {
      child "back" {
        workflow = "w1"
      }
    }
    on "done" { next = state.done }
  }
  state "done" {
    end = "completed"
  }
}

# ask delegates to a team whose member's requests run ask.
workflow "ask" {
  owner = agent.helper
  start = state.ask
  state "ask" {
    delegate {
      to   = team.crew.role.lead
      goal = "Help."
    }
    on "done" { next = state.done }
  }
  state "done" {
    end = "completed"
  }
}

# A cycle with a bound is fine: deeper runs are refused when they would start.
workflow "b1" {
  owner     = agent.helper
  start     = state.fan
  max_depth = 4
  state "fan" {
    spawn {
      child "again" {
        workflow = "b2"
      }
    }
    on "done" { next = state.done }
  }
  state "done" {
    end = "completed"
  }
}

workflow "b2" {
  owner = agent.helper
  start = state.fan
  state "fan" {
    spawn {
      child "back" {
        workflow = "b1"
      }
    }
    on "done" { next = state.done }
  }
  state "done" {
    end = "completed"
  }
}
