# Each definition below has an error of its own. Only those errors are
# reported: nothing that refers to them is "not defined", and the authority
# checks wait until every definition decodes.
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "writer" {
  model        = model.m
  instructions = "Write."
  max_risk     = "reed"
}

team "desk" {
  role "writer" {
    agent = agent.writer
  }
  budget = "lots"
}

skill "lookup" {
  description = "Look up."
  effect      = "read"
  adapter "python" {
    entry_point = "x:lookup"
  }
  retries = 3
}

binding "desk_looks_up" {
  skill = skill.lookup
  to    = team.desk.role.writer
}

workflow "w" {
  owner = team.desk
  start = state.first
  state "first" {
    turn {
      agent  = team.desk.role.writer
      goal   = "Look it up."
      skills = [skill.lookup]
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
  state "nowhere" {
    end = "failed"
  }
}
