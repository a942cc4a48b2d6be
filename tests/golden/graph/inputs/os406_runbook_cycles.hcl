runbook "circular" {
  step "fetch" {
    uses = "http"
    args = {
      url = step.publish.output.location
    }
  }

  step "shape" {
    uses = "transform"
    args = {
      data = step.fetch.output
    }
  }

  step "publish" {
    skill      = skill.publish
    depends_on = [step.shape]
  }

  step "wait_for_self" {
    uses       = "delay"
    depends_on = [step.wait_for_self]
  }

  step "independent" {
    uses = "set"
  }
}
