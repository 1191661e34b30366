"""What an entry is and how a folder of them is read and checked: the schema (`schema`), the
catalog with its cross-entry checks (`catalog`), each entry's search terms (`terms`) and opening
a project (`project`).

Knows nothing of the site or the commands: it may import `rootcause.errors`, `config`,
`located_yaml`, `validation`, `text` and `rootcause.matching`, never `rootcause.site` or
`rootcause.commands`.
"""
