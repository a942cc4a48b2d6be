# Replay of waits: a transform, a decision on the run's input, a one-second timer for the
# runs that are not urgent, then an inbound event (or its timeout) whose payload a decision
# reads.

model "scripted" {
  provider = "scripted"
  model    = "test-model"
}

agent "clerk" {
  model        = model.scripted
  instructions = "Answer with JSON only."
}

workflow "shipping" {
  owner = agent.clerk
  start = state.ready
  input "order" {
    type = string
  }
  input "urgent" {
    type = bool
  }
  state "ready" {
    transform {
      output = { order = input.order, urgent = input.urgent }
    }
    next = state.route
  }
  state "route" {
    decision {}
    branch {
      when = state.ready.output.urgent
      next = state.await
    }
    branch {
      next = state.nap
    }
  }
  state "nap" {
    wait {
      timer = "1s"
    }
    next = state.await
  }
  state "await" {
    wait {
      event       = "shipment"
      correlation = { order = input.order }
      timeout     = "1h"
    }
    next = state.check
    on "timeout" {
      next = state.late
    }
  }
  state "check" {
    decision {}
    branch {
      when = state.await.output.complete
      next = state.done
    }
    branch {
      next = state.partial
    }
  }
  state "done" {
    end = "completed"
  }
  state "partial" {
    end = "failed"
  }
  state "late" {
    end = "canceled"
  }
}
