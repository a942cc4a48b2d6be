workflow "restart" {
  owner = agent.clerk
  start = state.first

  state "first" {
    turn {
      agent = agent.clerk
      goal  = "Do the work"
    }
    next = state.done
  }

  state "done" {
    end  = "completed"
    next = state.first
    on "done" {
      next = state.first
    }
  }
}
