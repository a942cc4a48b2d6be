# References to the wrong kind of thing.
model "m" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "writer" {
  model        = skill.send
  instructions = "Write."
}

team "desk" {
  role "writer" {
    agent = team.desk
  }
}

skill "send" {
  description = "Send."
  effect      = "read"
  adapter "python" {
    entry_point = "mail:send"
  }
}

binding "wrong_way_round" {
  skill = agent.writer
  to    = skill.send
}

workflow "write" {
  owner = team.desk.role.writer
  start = state.draft

  state "draft" {
    turn {
      agent  = team.desk
      goal   = "Write."
      skills = [agent.writer]
    }
    next = state.send
  }

  state "send" {
    action {
      proposal = state.draft
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
