workflow "wrong_events" {
  owner = agent.clerk
  start = state.first

  input "x" {
    type = number
  }

  state "first" {
    turn {
      agent = agent.clerk
      goal  = "Do the work"
    }
    next = state.ask
  }

  state "ask" {
    approval {
      proposal = proposal.order
    }
    next = state.done
    on "aproved" {
      next = state.done
    }
    on "rejected" {
      next = state.rethink
    }
  }

  state "rethink" {
    turn {
      agent = agent.clerk
      goal  = "Think again"
    }
    branch {
      when = input.x > 1
      next = state.empty
    }
  }

  state "empty" {
    decision {}
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
