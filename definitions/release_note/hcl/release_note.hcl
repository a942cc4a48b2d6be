# An agent drafts a release note; sending it waits for a reviewer.

model "writer_default" {
  provider = "scripted"
  model    = "scripted-release-note"
}

skill "list_merged_changes" {
  description = "List the changes merged since a tag."
  effect      = "read"
  input       = object({ since = string })
  output      = object({ changes = list(object({ title = string, author = string })) })

  adapter "python" {
    entry_point = "openseal_examples.release_note:list_merged_changes"
  }
}

skill "send_email" {
  description = "Send an email to a mailing list."
  effect      = "external"
  input       = object({ to = string, subject = string, body = string })
  output      = object({ message_id = string })
  credential  = "mail_relay"

  adapter "http" {
    method = "POST"
    url    = "${config.mail_relay_url}/messages"
    body   = args
  }

  idempotency {
    key_header = "Idempotency-Key"
  }

  approval {
    required   = true
    approvers  = ["release-managers"]
    expires_in = "48h"
  }
}

agent "release_writer" {
  description  = "Writes release notes from merged changes."
  model        = model.writer_default
  instructions = "Summarise the merged changes for users: what is new, what changed, what to do."
  max_risk     = "external"
}

binding "writer_lists_changes" {
  skill = skill.list_merged_changes
  to    = agent.release_writer
}

binding "writer_sends_email" {
  skill = skill.send_email
  to    = agent.release_writer

  approval {
    required   = true
    approvers  = ["release-managers"]
    expires_in = "24h"
  }
}

workflow "release_note" {
  description = "Draft a release note and hold the email for review."
  owner       = agent.release_writer
  start       = state.draft

  input "release" {
    type = object({ version = string, since = string, mailing_list = optional(string, "users@example.org") })
  }

  state "draft" {
    turn {
      agent  = agent.release_writer
      goal   = "Draft the release note for ${input.release.version} covering changes since ${input.release.since}"
      skills = [skill.list_merged_changes]
      output = object({ subject = string, body = string })
    }
    next = state.propose
  }

  state "propose" {
    proposal "announcement" {
      skill = skill.send_email
      args = {
        to      = input.release.mailing_list
        subject = state.draft.output.subject
        body    = state.draft.output.body
      }
    }
    next = state.review
  }

  state "review" {
    approval {
      proposal   = proposal.announcement
      approvers  = ["release-managers"]
      expires_in = "24h"
    }
    on "approved" {
      next = state.send
    }
    on "changes_requested" {
      next = state.draft
    }
    on "rejected" {
      next = state.withdrawn
    }
    on "expired" {
      next = state.withdrawn
    }
  }

  state "send" {
    action {
      proposal = proposal.announcement
    }
    next = state.sent
  }

  state "sent" {
    end = "completed"
  }

  state "withdrawn" {
    end = "canceled"
  }
}
