workflow "fanned_out" {
  owner = agent.clerk
  start = state.quotes

  input "vendors" {
    type = list(string)
  }

  state "quotes" {
    parallel {
      branch "legal" {
        delegate {
          to   = team.legal
          goal = "Review the terms"
        }
      }
      branch "count" {
        transform {
          output = 1
        }
      }
    }
    next = state.each
  }

  state "each" {
    for_each {
      items = input.vendors
      do {
        action {
          skill = skill.notify
          args  = { vendor = vendor }
        }
      }
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
