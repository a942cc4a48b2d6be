# Names that do not exist, roots that are not in scope, a role the team does
# not have, and a credential read in an expression.
model "default" {
  provider = "scripted"
  model    = "scripted-m"
}

agent "researcher" {
  model        = model.defualt
  instructions = "Research."
}

team "shop" {
  role "researcher" {
    agent = agent.researcher
  }
}

skill "search_vendors" {
  description = "Search."
  effect      = "read"
  input       = object({ item = string })
  credential  = "catalogue"
  adapter "http" {
    method = "GET"
    url    = "${config.base_url}/search?item=${args.item}&key=${credential.catalogue}"
  }
}

binding "search" {
  skill = skill.search_vendors
  to    = team.shop.role.reseacher
}

workflow "buy" {
  owner = team.shop
  start = state.research

  input "request" {
    type = object({ item = string })
  }

  state "research" {
    turn {
      agent  = agent.researcher
      goal   = "Find ${input.reqest.item} (${inputs.request.item})"
      skills = [skill.search_vendor]
      output = object({ vendor = string })
    }
    next = state.review
  }

  state "review" {
    approval {
      proposal = proposal.order
    }
    on "approved" {
      next = state.done
    }
  }

  state "done" {
    end = "completed"
  }

  output "vendor" {
    value = state.research.vendor
  }
}
