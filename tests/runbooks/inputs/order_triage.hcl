# The peer system's node/edge form: fetch an order, page for urgent ones, queue the rest.
workflow "order_triage" {
  description = "Fetch an order; urgent orders page someone, the rest go to the queue."
  concurrency = 2

  node webhook "start" {
    path = "/orders"
  }

  node http "fetch" {
    method  = "GET"
    url     = "${input.base_url}/orders/${start.output.order_id}"
    timeout = "5s"
  }

  node if "urgent" {
    condition = "fetch.output.body.priority > 3"
  }

  node http "page" {
    method = "POST"
    url    = "${input.base_url}/echo"
    body   = { order = "${fetch.output.body.id}", level = "page" }
  }

  node set "queue" {
    values = { order = "${fetch.output.body.id}", level = "queue" }
  }

  node aggregate "item_total" {
    items = "${fetch.output.body.items}"
    op    = "sum"
  }

  edge "start" "fetch" {}
  edge "fetch" "urgent" {}
  edge "urgent" "page" {
    condition = "output.result"
  }
  edge "urgent" "queue" {
    condition = "!output.result"
  }
  edge "fetch" "item_total" {}
}
