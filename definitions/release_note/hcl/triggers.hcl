# The release note starts by itself: when the release pipeline publishes a version, and as a
# weekly digest. Both are deployments: they fire only once a change proposal activated them.

trigger "release_published" {
  description = "Draft the note when a release is published (pre-releases get none)."
  workflow    = workflow.release_note
  event {
    name   = "release.published"
    filter = payload.prerelease == false
  }
  input = {
    release = { version = payload.version, since = payload.previous_tag }
  }
  overlap = "queue"
}

trigger "weekly_digest" {
  description = "A digest of the week's merged changes, Fridays at 16:00 in Berlin."
  workflow    = workflow.release_note
  schedule {
    cron      = "0 16 * * FRI"
    time_zone = "Europe/Berlin"
  }
  input = {
    release = { version = "weekly digest of ${trigger.occurrence}", since = "last-digest" }
  }
  overlap  = "skip"
  catch_up = "latest"
}
