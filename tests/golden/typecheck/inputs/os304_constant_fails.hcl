# Constant expressions that fail whenever they run are refused when they compile.
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "writer" {
  model        = model.m
  instructions = "Write."
}

workflow "write" {
  owner = agent.writer
  start = state.draft

  input "pages" {
    type = number
  }

  state "draft" {
    turn {
      agent = agent.writer
      goal  = "Write ${input.pages / 0} pages, ${(5 % 0) + 1} times, ${sum([1e308, 1e308])}"
    }
    next = state.check
  }

  state "check" {
    decision {}
    branch {
      when = input.pages > 1e300 * 1e300
      next = state.done
    }
    branch {
      next = state.done
    }
  }

  state "done" {
    end = "completed"
  }
}
