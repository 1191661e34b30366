"""The signature language and everything that reads logs: patterns and placeholders
(`patterns`), launcher prefixes (`logline`), what "a signature matches" means (`signatures`),
the streaming scanner (`scanner`) and the ranking of what it found (`ranking`).

The lowest layer above the base modules: it may import `rootcause.errors` and `rootcause.text`,
never `rootcause.entries`, `rootcause.site` or `rootcause.commands`, so that a built site's
signature index can be matched without loading any entry.
"""
