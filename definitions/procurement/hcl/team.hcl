agent "researcher" {
  description  = "Compares offers from approved vendors."
  model        = model.procurement_default
  instructions = file("../prompts/researcher.md")
  max_risk     = "read"

  budget {
    turns      = 6
    tokens     = 20000
    tool_calls = 10
  }
}

agent "buyer" {
  description  = "Places approved purchase orders."
  model        = model.procurement_default
  instructions = "Submit exactly the order that was approved, once."
  max_risk     = "external"
}

team "procurement" {
  description = "Buys equipment from approved vendors."

  role "researcher" {
    agent = agent.researcher
  }

  role "buyer" {
    agent = agent.buyer
  }

  policy {
    approvers              = ["requester"]
    approval_required_from = "external"

    budget {
      spend    = 250000
      currency = "EUR"
      period   = "30d"
    }
  }
}

binding "researcher_searches_vendors" {
  skill    = skill.search_vendors
  to       = team.procurement.role.researcher
  max_risk = "read"
}

binding "buyer_submits_orders" {
  skill       = skill.submit_purchase_order
  to          = team.procurement.role.buyer
  constraints = [args.total <= 20000, args.currency == "EUR"]
}
