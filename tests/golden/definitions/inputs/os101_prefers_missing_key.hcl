# `strat` is as close to `state` (written) as to `start` (required, missing):
# the hint names the missing key.
workflow "w" {
  owner = agent.a
  strat = state.a
  state "a" {
    end = "completed"
  }
}
