"""The static site: Markdown and content pages (`content`), page rendering (`render`), the search
index and the browser's signature file (`search`), feeds (`feeds`), the atomic writer (`write`)
and the thin orchestrator (`builder`).

May import the base modules, `rootcause.entries` and `rootcause.matching`; never
`rootcause.commands`.
"""
