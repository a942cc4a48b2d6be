team "t" {
  role "r" {
    agent = agent.a
  }
  role "r" {
    agent = agent.b
  }
}
