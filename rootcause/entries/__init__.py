"""What an entry is and how a folder of them is read and checked.

Modules: `schema` (the entry model), `claims` (facts tied to their sources), `placeholders` (the
scaffold's TODO refused), `catalog` (loading every entry and the checks across entries), `terms`
(an entry's search terms), `alerts` (line filters exported from signatures, and their proof),
`mutations` (examples pasted the ways real pastes differ must still be diagnosed), `study` (the
frequency study), `project` (opening a project folder).

Knows nothing of the site or the commands: it may import the base modules and
`rootcause.matching`, never `rootcause.site` or `rootcause.commands`.
"""
