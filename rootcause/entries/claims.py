"""Claims tied to sources: the checks that keep an entry's numbers honest.

An independent fact-check found the errors of entries not in their main error text but in
version details and citations. So every `affected` range names the reference that states it
(E044), every version an entry's prose gives next to a system's name appears in a reference, in
`affected` or in an example's origin (E045), every issue or pull request the prose cites
("transformers #39849", "PR #1958") is among the references (E049), and GitHub reference
addresses are canonical, of the kind they claim and listed once (E047, E048). All are errors: the
two claim checks began as warnings (W002, W003) while the bundled entries still carried untied
claims, and became errors once none was left.
"""

from __future__ import annotations

import re
from typing import Iterator

from ..errors import Diagnostic
from ..located_yaml import Located
from .schema import Entry, prose_fields

#: names a version is stated next to ("fixed in transformers 4.46", "torch>=2.4", "NCCL 2.18.3")
_SYSTEM_NAMES = (r"torch|pytorch|deepspeed|transformers|accelerate|peft|trl|lightning|pytorch-lightning|nccl|cuda|"
                 r"cudnn|megatron-lm|megatron-core|megatron|torchtitan|safetensors|bitsandbytes|python|flash-attn|"
                 r"flash-attention|apex|triton|vllm|ray|slurm|libfabric|aws-ofi-nccl")
VERSION_CLAIM = re.compile(r"(?i)(?<![\w/.-])(?:" + _SYSTEM_NAMES + r")[ ]?(?:v|version |release |==|>=|<=|<|>|~=)?[ ]?"
                           r"v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+|rc\d+|a\d+|b\d+)?)(?![\w.])")
#: "owner/repo #123", "repo #123", "repo#123", "PR #123", "issue #123", "pull request #123", "(#123)"
CITATION = re.compile(r"(?<![\w/#&-])(?:(?:(?:([A-Za-z0-9][\w.-]*)/)?([A-Za-z](?:[\w.-]*\w)?)|(PR|pull request|issue)) ?)?"
                      r"#([1-9][0-9]{0,6})\b")
GITHUB = re.compile(r"^https://github\.com/([\w.-]+)/([\w.-]+)(?:/(.*))?$")
_CANONICAL_THREAD = re.compile(r"^(issues|pull|discussions)/([1-9][0-9]*)(?:#[\w-]+)?$")
_CANONICAL_OTHER = re.compile(r"^(?:commit/[0-9a-f]{7,40}|blob/[^?]+|tree/[^?]+|releases(?:/tag/[^?/]+)?|"
                              r"compare/[^?]+|wiki(?:/[^?]+)?|pull/[1-9][0-9]*/(?:files|commits)[^?]*)(?:#[\w.-]+)?$")
_KIND_PATH = {"issue": ("issues", "discussions"), "pull-request": ("pull",)}
#: words before "#N" that say what it is, not where: "PR #1525" is any repository's pull request 1525
_CITATION_WORDS = frozenset({"PR", "PRs", "pr", "issue", "issues", "Issue", "Issues", "pull", "Pull"})
#: words before "#N" that make it no citation at all: "rank #3", "step #120", "GPU #1"
_NOT_CITATIONS = frozenset({"step", "rank", "line", "GPU", "gpu", "node", "epoch", "item", "number", "no", "No",
                            "version", "iteration", "layer"})
#: ordinary words before a bare citation: "see #1234" cites #1234 of some repository
_NOT_REPOS = frozenset({"and", "or", "see", "See", "in", "of", "the", "also", "by", "from", "since", "after", "before",
                        "until", "fixed", "Fixed"})


def github_thread(url: str) -> tuple[str, str, str, int] | None:
    """(owner, repo, kind path, number) of a GitHub issue, pull request or discussion address."""
    match = GITHUB.match(url)
    if not match or not match.group(3):
        return None
    thread = _CANONICAL_THREAD.match(match.group(3))
    if not thread:
        return None
    return match.group(1), match.group(2), thread.group(1), int(thread.group(2))


def thread_label(url: str) -> str:
    """A thread address as readers cite it (owner/repo#123), else the host and path."""
    from urllib.parse import urlsplit

    match = GITHUB.match(url)
    thread = re.match(r"(?:issues|pull|discussions)/(\d+)", match.group(3) or "") if match else None
    if match and thread:
        return f"{match.group(1)}/{match.group(2)}#{thread.group(1)}"
    parts = urlsplit(url)
    return (parts.netloc + parts.path).rstrip("/")


def check_claims(entry: Entry, located: Located, shown: str) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    urls = [r.url for r in entry.references]
    problems += _reference_forms(entry, located, shown)
    for i, affected in enumerate(entry.affected):
        if affected.ref is None:
            line, col = located.where(("affected", i))
            problems.append(Diagnostic(shown, line, col, "E044", f"affected.{i}: the range for '{affected.system}' "
                                       "names no reference", "add ref: <the URL of the reference that states it>"))
        elif affected.ref not in urls:
            line, col = located.where(("affected", i, "ref"))
            problems.append(Diagnostic(shown, line, col, "E044", f"affected.{i}.ref: '{affected.ref[:100]}' is not "
                                       "one of the entry's references", "add it to references, or point at one there"))
    # a version is tied when a reference names it, an affected range gives it, or an example was
    # reproduced with it or assembled from its source (the example's origin says so)
    sources = " ".join([r.title for r in entry.references] + urls +
                       [v for a in entry.affected for v in (a.introduced, a.fixed, a.last_affected) if v] +
                       [ex.reproduced or ex.assembled or "" for sig in entry.signatures for ex in sig.examples])
    threads = [t for t in (github_thread(u) for u in urls) if t]
    reported: set[tuple[str, str]] = set()   # each untied claim once per entry, where it first appears
    for where, text in prose_fields(entry):
        for version in _untied_versions(text, sources):
            if ("E045", version.lower()) in reported:
                continue
            reported.add(("E045", version.lower()))
            line, col = located.where(where)
            problems.append(Diagnostic(shown, line, col, "E045", f"{'.'.join(map(str, where))}: version {version} is "
                                       "not tied to a source", "cite the release note, pull request or tagged source "
                                       "that says so in references (its title or address names the version), or "
                                       "record it in affected"))
        for cited in _uncited(text, threads):
            if ("E049", cited) in reported:
                continue
            reported.add(("E049", cited))
            line, col = located.where(where)
            problems.append(Diagnostic(shown, line, col, "E049", f"{'.'.join(map(str, where))}: '{cited}' is cited "
                                       "but not among the references", "add the issue or pull request to references "
                                       "with its address"))
    return problems


#: what every VERSION_CLAIM match holds: a text without it is skipped (most prose)
_DOTTED = re.compile(r"\d\.\d")


def _untied_versions(text: str, sources: str) -> Iterator[str]:
    if not _DOTTED.search(text):
        return
    seen = set()
    for match in VERSION_CLAIM.finditer(text):
        version = match.group(1)
        if version in seen:
            continue
        seen.add(version)
        if not re.search(r"(?<![\d.])v?" + re.escape(version) + r"(?![\d])", sources):
            yield match.group(0).strip()


def _uncited(text: str, threads: list[tuple[str, str, str, int]]) -> Iterator[str]:
    if "#" not in text:   # in every CITATION match
        return
    for match in CITATION.finditer(text):
        owner, repo, word, number = match.group(1), match.group(2), match.group(3), int(match.group(4))
        if repo in _NOT_CITATIONS:
            continue
        if repo in _NOT_REPOS or repo is None:   # a bare "#N"
            owner = repo = None
            word = "#"
        candidates = [t for t in threads if t[3] == number]
        # "transformers #39849" names its repository; "since #980" or "PR #1958" do not, and any
        # reference with that number will do (a word is read as a repository only if one is cited)
        # (a bare "#N" has no repository and the word "#")
        names_repo = word is None and repo is not None and repo not in _CITATION_WORDS and (
            owner is not None or any(_same_repo(repo, t[1]) for t in threads)
            or "-" in repo or repo[:1].isupper() and repo[1:2].islower() is False)
        if names_repo and repo is not None:
            candidates = [t for t in candidates if _same_repo(repo, t[1]) and (owner is None or owner.lower() == t[0].lower())]
        if not candidates:
            yield match.group(0) if names_repo or word not in (None, "#") or repo in _CITATION_WORDS else f"#{number}"


def _same_repo(cited: str, repo: str) -> bool:
    """'pytorch' cites pytorch/pytorch, 'Megatron-LM' NVIDIA/Megatron-LM, 'lightning' Lightning-AI/pytorch-lightning."""
    cited, repo = cited.lower(), repo.lower()
    return cited == repo or cited in repo.split("-") or repo.endswith(cited) or repo.startswith(cited)


def _reference_forms(entry: Entry, located: Located, shown: str) -> list[Diagnostic]:
    problems = []
    first: dict[str, int] = {}
    for i, reference in enumerate(entry.references):
        if reference.url in first:
            line, col = located.where(("references", i, "url"))
            problems.append(Diagnostic(shown, line, col, "E048", f"references.{i}: the same address as "
                                       f"references.{first[reference.url]}", "list each source once"))
            continue
        first[reference.url] = i
        match = GITHUB.match(reference.url)
        if not match:
            continue
        rest = match.group(3) or ""
        thread = _CANONICAL_THREAD.match(rest)
        problem = None
        if not thread and not _CANONICAL_OTHER.match(rest) and rest:
            problem = "is not a canonical GitHub address (issues/N, pull/N, commit/SHA, blob/TAG/path, releases/tag/V)"
        elif reference.kind in _KIND_PATH and (not thread or thread.group(1) not in _KIND_PATH[reference.kind]):
            problem = f"is not a GitHub {reference.kind.replace('-', ' ')} address, though its kind says so"
        if problem:
            line, col = located.where(("references", i, "url"))
            problems.append(Diagnostic(shown, line, col, "E047", f"references.{i}.url: '{reference.url[:120]}' {problem}",
                                       "link the issue or pull request itself, e.g. "
                                       "https://github.com/OWNER/REPO/issues/N, and set kind to match"))
    return problems
