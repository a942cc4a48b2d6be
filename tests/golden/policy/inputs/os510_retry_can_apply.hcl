# `retry` on effects: `save_note` does not declare same_key_retry, so nothing may
# send it twice; `post_note` may be sent again with its key, but the workflow
# sends it as an action, which only reconciliation sends again. The read's
# retry is fine.
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
  retry {
    attempts = 3
  }
}

skill "save_note" {
  description = "Save a note."
  effect      = "write"
  adapter "python" {
    entry_point = "notes:save"
  }
  idempotency {
    key_header = "Idempotency-Key"
  }
  retry {
    attempts = 3
  }
}

skill "post_note" {
  description = "Post a note."
  effect      = "write"
  adapter "python" {
    entry_point = "notes:post"
  }
  idempotency {
    same_key_retry = true
  }
  retry {
    attempts = 2
    backoff  = "5s"
  }
}

agent "writer" {
  model        = model.m
  instructions = "Take notes."
  max_risk     = "write"
}

binding "writer_posts" {
  skill = skill.post_note
  to    = agent.writer
}

workflow "notes" {
  owner = agent.writer
  start = state.post

  state "post" {
    action {
      skill = skill.post_note
      args  = { text = "hello" }
    }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
