workflow "orphan" {
  owner = agent.clerk
  start = state.first

  state "first" {
    turn {
      agent = agent.clerk
      goal  = "Do the work"
    }
    next = state.done
  }

  state "lonely" {
    turn {
      agent = agent.clerk
      goal  = "Nobody comes here"
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
