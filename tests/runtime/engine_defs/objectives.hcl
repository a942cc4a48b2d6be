# Workflows whose objectives have terms: a success criterion over the run's output, a retry
# policy and a priority. Pure states only, so a claim runs a whole run in one commit.

model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

workflow "scored" {
  owner = agent.clerk
  start = state.count
  input "n" {
    type = number
  }
  output "total" {
    type  = number
    value = state.count.output.total
  }
  objective {
    priority = 5
    success  = output.total > 10
    retry {
      max_attempts = 3
      backoff      = "30s"
      max_backoff  = "45s"
    }
  }
  state "count" {
    transform {
      output = { total = input.n * 2 }
    }
    next = state.done
  }
  state "done" {
    end = "completed"
  }
}

workflow "broken" {
  owner = agent.clerk
  start = state.done
  objective {
    retry {
      max_attempts = 2
      backoff      = "10s"
    }
  }
  state "done" {
    end = "failed"
  }
}

workflow "plain" {
  owner = agent.clerk
  start = state.done
  state "done" {
    end = "completed"
  }
}
