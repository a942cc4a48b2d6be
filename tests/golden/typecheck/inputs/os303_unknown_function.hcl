# A function that does not exist and functions given the wrong number of arguments.
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

  input "topic" {
    type = string
  }

  state "draft" {
    turn {
      agent = agent.writer
      goal  = "Write about ${uppercase(input.topic)} in ${lenght(input.topic)} words"
    }
    next = state.check
  }

  state "check" {
    decision {}
    branch {
      when = contains(input.topic) || length(input.topic, 2) > 3
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
