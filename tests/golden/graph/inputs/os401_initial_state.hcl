workflow "misspelt_start" {
  owner = agent.clerk
  start = state.frist

  state "first" {
    turn {
      agent = agent.clerk
      goal  = "Do the work"
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}

workflow "start_not_a_state" {
  owner = agent.clerk
  start = skill.first

  state "first" {
    turn {
      agent = agent.clerk
      goal  = "Do the work"
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
