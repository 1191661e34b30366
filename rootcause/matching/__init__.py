"""The signature language and everything that reads logs.

Modules: `patterns` (placeholders → portable regexes), `logline` (launcher prefixes), `events`
(what a failure leaves in a log), `signatures` (what "a signature matches" means), `anchors`
(signatures by their literal anchors), `scanner` (streaming logs), `incident` (the log model and
the first failure), `metrics` (what the loss a log ends with shows), `ranking` (findings and the report), `rows` (an entry's row in a
compiled index, read by name), `shared` (the rules both matchers read, from `shared.json`),
`propose` (a signature from a log line), `readable` (a signature as a reader reads it, for the
hub tables), `flight_recorder` (Flight Recorder dumps read safely), `flight_verdict` (the verdict
on one job's dumps).

The lowest layer above the base modules: it may import `rootcause.errors` and `rootcause.text`,
never `rootcause.entries`, `rootcause.site` or `rootcause.commands`, so that a built site's
signature index can be matched without loading any entry.
"""
