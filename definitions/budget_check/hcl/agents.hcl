# Two agents that work together: the buyer asks finance to confirm a budget.
# The scripted provider answers from scripts/budget_check.json, so no API key is needed.
model "budget_scripted" {
  provider = "scripted"
  model    = "scripted-budget"
}

agent "purchaser" {
  description  = "Picks a vendor and buys once finance has confirmed the budget."
  model        = model.budget_scripted
  instructions = "Pick the cheapest approved vendor. Answer with JSON only."
}

agent "finance" {
  description  = "Confirms that a purchase fits a cost center's budget."
  model        = model.budget_scripted
  instructions = "Check the amount against the cost center's remaining budget. Answer with JSON only."
  # A request delegated to finance runs as this workflow, in a child run.
  workflow = "confirm_budget"
}
