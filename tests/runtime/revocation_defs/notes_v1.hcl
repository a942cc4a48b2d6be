# The notes workflow, first version: a write skill the binding grants without an approval.

model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Record."
  max_risk     = "write"
}

skill "record" {
  description = "Record a note (a write)."
  effect      = "write"
  input       = object({ q = string })
  output      = object({ answer = string })

  adapter "python" {
    entry_point = "tests.runtime.actions.test_revocation:record"
  }

  idempotency {
    same_key_retry = true
  }
}

binding "clerk_records" {
  skill = skill.record
  to    = agent.clerk
}

workflow "notes" {
  owner = agent.clerk
  start = state.draft

  state "draft" {
    proposal "note" {
      skill = skill.record
      args  = { q = "hello" }
    }
    next = state.submit
  }

  state "submit" {
    action { proposal = proposal.note }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
