# The notes workflow, second version: the binding now requires an approval, and the
# workflow asks for one before the action.

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
  approval {
    required = true
  }
}

workflow "notes" {
  owner = agent.clerk
  start = state.draft

  state "draft" {
    proposal "note" {
      skill = skill.record
      args  = { q = "hello" }
    }
    next = state.review
  }

  state "review" {
    approval {
      proposal   = proposal.note
      expires_in = "1h"
    }
    on "approved" { next = state.submit }
    on "rejected" { next = state.done }
    on "changes_requested" { next = state.done }
    on "expired" { next = state.done }
  }

  state "submit" {
    action { proposal = proposal.note }
    next = state.done
  }

  state "done" {
    end = "completed"
  }
}
