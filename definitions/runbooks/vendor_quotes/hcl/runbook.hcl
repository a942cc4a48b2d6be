# Pick the cheapest vendor quote within budget, in one process, with no side effects.
# Run it:  openseal run definitions/runbooks/vendor_quotes/hcl/runbook.hcl \
#            --input-file definitions/runbooks/vendor_quotes/quotes.json --input budget=9000

runbook "vendor_quotes" {
  description = "Rank vendor quotes for a laptop order and pick the cheapest one within budget."
  on_failure  = "fail_fast"
  concurrency = 4

  input "quotes" {
    type = list(object({ vendor = string, unit_price = number, approved = bool }))
  }
  input "quantity" {
    type    = number
    default = 10
  }
  input "budget" {
    type = number
  }

  step "approved" {
    uses = "filter"
    args = {
      items     = input.quotes
      predicate = item.approved && item.unit_price * input.quantity <= input.budget
    }
  }

  step "ranked" {
    uses = "sort"
    args = { items = step.approved.output, by = "unit_price" }
  }

  step "average" {
    uses = "aggregate"
    args = { items = input.quotes, op = "avg", field = "unit_price" }
  }

  step "found" {
    uses = "if"
    args = { condition = length(step.approved.output) > 0 }
  }

  step "choice" {
    uses = "transform"
    when = step.found.output.result
    args = {
      value = {
        vendor = step.ranked.output[0].vendor
        total  = step.ranked.output[0].unit_price * input.quantity
      }
    }
    timeout = "5s"
  }

  output "choice" {
    type  = object({ vendor = string, total = number })
    value = step.choice.output
  }
  output "market_average" {
    type  = number
    value = step.average.output
  }
}
