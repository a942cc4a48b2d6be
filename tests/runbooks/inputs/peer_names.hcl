# The peer system's own attribute names: set `variable`/`value` and `variables`,
# filter `condition`, sort `field`/`order`, aggregate `operation`, transform `template`.
workflow "quotes" {
  node manual "start" {}
  node set "vendors" {
    variable = "quotes"
    value    = [{ vendor = "a", price = 3 }, { vendor = "b", price = 1 }, { vendor = "c", price = 2 }]
  }
  node filter "cheap" {
    items     = "${vendors.output.quotes}"
    condition = "item.price < 3"
  }
  node sort "ranked" {
    items = "${cheap.output}"
    field = "price"
    order = "desc"
  }
  node aggregate "total" {
    items     = "${ranked.output}"
    operation = "sum"
    field     = "price"
  }
  node transform "note" {
    template = "total ${total.output} from ${ranked.output[0].vendor}"
  }
  node set "summary" {
    variables = { total = "${total.output}", note = "${note.output}" }
  }
  edge "start" "vendors" {}
}
