workflow "loop_forever" {
  owner = agent.clerk
  start = state.first

  input "x" {
    type = number
  }

  state "first" {
    decision {}
    branch {
      when = input.x > 1
      next = state.spin
    }
    branch {
      next = state.done
    }
  }

  state "spin" {
    turn {
      agent = agent.clerk
      goal  = "Try again"
    }
    next = state.pause
  }

  state "pause" {
    wait {
      timer = "1h"
    }
    next = state.spin
  }

  state "done" {
    end = "completed"
  }
}

workflow "never_ends" {
  owner = agent.clerk
  start = state.ping

  state "ping" {
    turn {
      agent = agent.clerk
      goal  = "Ping"
    }
    next = state.pong
  }

  state "pong" {
    turn {
      agent = agent.clerk
      goal  = "Pong"
    }
    next = state.ping
  }
}
