"""An entry's row in a compiled signature index (`signatures.json`'s `entries`, the diagnosis
index's entry sections): what a report shows about an entry, declared once here and read by
name on both sides (theme/assets/matcher.js reads the same names)."""

from __future__ import annotations

from dataclasses import dataclass

ROLES = ("cause", "consequence", "warning", "symptom")   # (a symptom has no signature: named for what a log shows)


@dataclass(frozen=True)
class Persistence:
    """A warning that counts as a failure when it repeats `count` times within `within` lines."""

    count: int
    within: int


@dataclass
class EntryInfo:
    """What a report shows about an entry; from the catalog or a compiled index's row."""

    id: str
    title: str
    summary: str
    url: str
    fix: str
    role: str = "cause"
    persistent: Persistence | None = None
    #: how to confirm this cause on the machine, ahead of the fix: the entry's first `confirm` step
    #: that has a command (else its first step), and that command ("" for none)
    check: str = ""
    check_command: str = ""

    @classmethod
    def of_entry(cls, entry) -> "EntryInfo":
        """From a validated entry (`entries.schema.Entry`)."""
        from ..text import plain

        persistent = Persistence(entry.persistent.count, entry.persistent.within) if entry.persistent else None
        confirm = next((c for c in entry.confirm if c.command), entry.confirm[0] if entry.confirm else None)
        return cls(entry.id, entry.title, plain(entry.summary), f"entries/{entry.id}/", plain(entry.fix[0].step),
                   entry.role, persistent, plain(confirm.step) if confirm else "",
                   (confirm.command or "").strip() if confirm else "")

    @classmethod
    def from_row(cls, entry_id: str, row: dict) -> "EntryInfo":
        """From a row that `row_problem` accepted."""
        persistent = row.get("persistent")
        return cls(entry_id, row["title"], row["summary"], row["url"], row["fix"], row["role"],
                   Persistence(persistent["count"], persistent["within"]) if persistent else None,
                   row["check"], row["check_command"])

    def row(self) -> dict:
        """The row as stored: every field but the id, which is its key."""
        return {"title": self.title, "summary": self.summary, "url": self.url, "fix": self.fix, "role": self.role,
                "persistent": {"count": self.persistent.count, "within": self.persistent.within}
                if self.persistent else None, "check": self.check, "check_command": self.check_command}


#: the row's fields, as `EntryInfo.row` writes them
ROW_FIELDS = ("title", "summary", "url", "fix", "role", "persistent", "check", "check_command")


def _number(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -10**9 < value < 10**9


def row_problem(key: str, value) -> str | None:
    """What is wrong with one row of a compiled index's entries (it may come from anywhere), or None."""
    where = f"entries['{key[:60]}']"
    if not isinstance(value, dict) or sorted(value) != sorted(ROW_FIELDS):
        return f"{where} is not a mapping of exactly {', '.join(ROW_FIELDS)}"
    if not all(isinstance(value[name], str) for name in ("title", "summary", "url", "fix", "check", "check_command")):
        return f"{where}: title, summary, url, fix, check and check_command must be texts"
    if value["role"] not in ROLES:
        return f"{where}: role must be one of {', '.join(ROLES)}"
    persistent = value["persistent"]
    if persistent is not None and not (isinstance(persistent, dict) and sorted(persistent) == ["count", "within"]
                                       and _number(persistent["count"]) and _number(persistent["within"])):
        return f"{where}: persistent must be null or a mapping of count and within (numbers)"
    return None
