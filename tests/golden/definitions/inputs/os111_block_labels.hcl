# A definition block without its name, one with a label too many, and a state
# without its name: each is reported at the block, with nothing cascading from it.
model "m" {
  provider = "scripted"
  model    = "scripted-small"
}

agent "good" {
  model        = model.m
  instructions = "Help."
}

agent {
  model        = model.m
  instructions = "Help."
}

agent "helper" "extra" {
  model        = model.m
  instructions = "Help."
}

workflow "w" {
  owner = agent.helper
  start = state.done
  state {
    end = "failed"
  }
  state "done" {
    end = "completed"
  }
}
