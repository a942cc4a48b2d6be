workflow "every_kind" {
  owner = team.ops
  start = state.think

  input "name" {
    type = string
  }

  state "think" {
    turn {
      agent = team.ops.role.planner
      goal  = "Plan the work for ${input.name}"
    }
    next = state.shape
  }

  state "shape" {
    transform {
      output = { title = input.name }
    }
    next = state.fan_out
  }

  state "fan_out" {
    parallel {
      join = "any"
      branch "left" {
        transform {
          output = 1
        }
      }
      branch "right" {
        transform {
          output = 2
        }
      }
    }
    on "done" {
      next = state.each
    }
    on "failed" {
      next = state.failed
    }
  }

  state "each" {
    for_each {
      items = [1, 2, 3]
      do {
        transform {
          output = item
        }
      }
    }
    next = state.ask_team
  }

  state "ask_team" {
    delegate {
      to   = team.legal
      goal = "Check the wording"
    }
    on "done" {
      next = state.gather
    }
    on "rejected" {
      next = state.failed
    }
  }

  state "gather" {
    spawn {
      child "north" {
        workflow = "regional_report"
        input    = { region = "north" }
      }
      child "south" {
        workflow = "regional_report"
        input    = { region = "south" }
      }
      child "audit" {
        workflow = "audit_trail"
      }
      join       = "quorum"
      quorum     = 2
      expires_in = "1h"
    }
    next = state.settle
    on "expired" {
      next = state.failed
    }
  }

  state "settle" {
    wait {
      timer = "90m"
    }
    next = state.choose
  }

  state "choose" {
    decision {}
    branch {
      when = input.name == "say \"<hi>\" & #1"
      next = state.draft
    }
    branch {
      next = state.canceled
    }
  }

  state "draft" {
    proposal "note" {
      skill = skill.send_note
      args = {
        text = input.name
      }
    }
    next = state.review
  }

  state "review" {
    approval {
      proposal  = proposal.note
      approvers = ["ops-leads", "legal"]
    }
    on "approved" {
      next = state.send
    }
    on "rejected" {
      next = state.canceled
    }
    on "expired" {
      next = state.canceled
    }
  }

  state "send" {
    action {
      proposal = proposal.note
    }
    on "done" {
      next = state.done
    }
    on "failed" {
      when = input.name != ""
      next = state.failed
    }
  }

  state "done" {
    end = "completed"
  }

  state "failed" {
    end = "failed"
  }

  state "canceled" {
    end = "canceled"
  }
}
