workflow "tight_budget" {
  owner = agent.clerk
  start = state.first

  input "x" {
    type = number
  }

  budget {
    turns       = 1
    model_calls = 0
  }

  state "first" {
    turn {
      agent = agent.clerk
      goal  = "Do the work"
    }
    next = state.pick
  }

  state "pick" {
    decision {}
    branch {
      when = input.x > 1
      next = state.more
    }
    branch {
      next = state.done
    }
  }

  state "more" {
    turn {
      agent = agent.clerk
      goal  = "Do more"
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
