workflow "typos" {
  owner = agent.clerk
  start = state.first

  state "first" {
    turn {
      agent = agent.clerk
      goal  = "Do the work"
    }
    next = state.revew
  }

  state "review" {
    approval {
      proposal = proposal.order
    }
    on "approved" {
      next = skill.submit
    }
    on "rejected" {
      next = state.done
    }
  }

  state "done" {
    end = "completed"
  }
}

runbook "missing_steps" {
  step "fetch" {
    uses = "http"
  }

  step "shape" {
    uses       = "transform"
    depends_on = [step.fetc, skill.fetch]
    args = {
      data  = step.fetch.output
      extra = step.missing.output
    }
  }
}
