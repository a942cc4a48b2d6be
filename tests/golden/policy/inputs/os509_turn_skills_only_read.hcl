# A turn that offers the model a skill with effects: the gateway would refuse
# every such tool call, so the compiler warns. The read skill is fine.
model "m" {
  provider = "scripted"
  model    = "scripted"
}

skill "read_note" {
  description = "Read a note."
  effect      = "read"
  adapter "python" {
    entry_point = "notes:read"
  }
}

skill "save_note" {
  description = "Save a note."
  effect      = "write"
  adapter "python" {
    entry_point = "notes:save"
  }
  idempotency {
    same_key_retry = true
  }
}

agent "writer" {
  model        = model.m
  instructions = "Take notes."
  max_risk     = "write"
}

binding "writer_reads" {
  skill = skill.read_note
  to    = agent.writer
}

binding "writer_saves" {
  skill = skill.save_note
  to    = agent.writer
}

workflow "notes" {
  owner = agent.writer
  start = state.think

  state "think" {
    turn {
      agent  = agent.writer
      goal   = "Write a note"
      skills = [skill.read_note, skill.save_note]
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
