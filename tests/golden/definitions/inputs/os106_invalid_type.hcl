workflow "w" {
  owner = agent.a
  start = state.done
  input "request" {
    type = object({ item = strng })
  }
  state "done" {
    end = "completed"
  }
}
