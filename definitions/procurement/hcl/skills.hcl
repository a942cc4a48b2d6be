skill "search_vendors" {
  description = "Search the approved-vendor catalogue for an item and return offers."
  effect      = "read"
  input       = object({ item = string, quantity = number })
  output = object({
    item     = string
    quantity = number
    offers = list(object({
      vendor         = string
      name           = string
      unit_price     = number
      currency       = string
      in_stock       = bool
      lead_time_days = number
    }))
  })
  credential  = "procurement_api"
  timeout     = "10s"

  adapter "http" {
    method = "GET"
    url    = "${config.procurement_url}/vendors?item=${args.item}&quantity=${args.quantity}"
  }

  retry {
    attempts = 3
    backoff  = "1s"
  }
}

skill "submit_purchase_order" {
  description = "Submit a purchase order to the procurement service."
  effect      = "external"
  input = object({
    vendor      = string
    quantity    = number
    total       = number
    currency    = string
    destination = string
  })
  output = object({
    order_id        = string
    status          = string
    vendor          = string
    vendor_name     = string
    item            = optional(string)
    quantity        = number
    total           = number
    currency        = string
    destination     = string
    idempotency_key = string
  })
  credential = "procurement_api"
  timeout    = "15s"

  adapter "http" {
    method = "POST"
    url    = "${config.procurement_url}/orders"
    body   = args
  }

  idempotency {
    key_header     = "Idempotency-Key"
    same_key_retry = true

    lookup "http" {
      method = "GET"
      url    = "${config.procurement_url}/orders/by-key/${action.key}"
    }
  }

  approval {
    required   = true
    approvers  = ["requester"]
    expires_in = "72h"
  }
}
