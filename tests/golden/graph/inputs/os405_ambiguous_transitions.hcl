workflow "two_ways" {
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
    next = state.pick
    on "done" {
      next = state.done
    }
  }

  state "pick" {
    decision {}
    branch {
      next = state.done
    }
    branch {
      when = input.x > 1
      next = state.stuck
    }
  }

  state "stuck" {
    action {
      skill = skill.file_report
    }
  }

  state "done" {
    end = "completed"
  }
}
