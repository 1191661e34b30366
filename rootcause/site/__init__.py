"""The static site: the pipeline's index, render and write stages, and their orchestrator.

Modules: `builder` (the pipeline, stage by stage, memoised in the store), `stamps` (what a build
depends on and the keys of its results), `content` (Markdown and content pages), `highlight`
(code blocks), `render` (pages), `template_cache` (compiled templates), `page_workers` (rendering
in forked workers), `search` (the search index and `signatures.json`), `feeds` (sitemap, Atom),
`diagnosis_index` (the compiled index that diagnosing reads), `write` (the atomic writer).

May import the base modules, `rootcause.entries` and `rootcause.matching`; never
`rootcause.commands`.
"""
