"""site.yml: the site's identity, where it is hosted, and the vocabularies entries must use.

Declared, validated and documented in one place (like MkDocs' config): every option is a field
with a description, and `rootcause schema` documents it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from .errors import Diagnostic, display_path
from .files import folder_problem, is_inside, relative_path_problem
from .located_yaml import load_yaml
from .validation import validate

KEBAB = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"


def check_url(value: str) -> str:
    """An absolute http(s) URL with a host; anything else is E015."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or " " in value:
        raise PydanticCustomError("url", "'{value}' is not an absolute http(s) URL",
                                  {"value": value, "code": "E015",
                                   "hint": "write the full address, starting with https://"})
    return value


def check_site_url(value: str) -> str:
    """The site's own address: as `check_url`, and its path must be a plain sub-path. Its path is
    where the 404 page (served at any address) loads its styles and scripts from, so a path such
    as `//evil.example/` would make it load them from another host."""
    value = check_url(value)
    parts = urlsplit(value)
    segments = parts.path.split("/")[1:-1] if parts.path.endswith("/") else parts.path.split("/")[1:]
    if (parts.query or parts.fragment or parts.username or parts.password or "\\" in value
            or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value)
            or any(segment in ("", ".", "..") for segment in segments)
            or not all(ch.isalnum() or ch in "-._~%/" for ch in parts.path)):
        raise PydanticCustomError("url", "'{value}' is not a plain site address",
                                  {"value": value, "code": "E015",
                                   "hint": "write https://host/ or https://host/sub-path/: single slashes, no "
                                           "'..', no query, fragment or user name"})
    return value


def check_folder_name(value: str | None) -> str | None:
    """A folder of the project, named relative to it (checked against the disk by `load_config`)."""
    if value is None:
        return value
    problem = relative_path_problem(value)
    if problem:
        raise PydanticCustomError("path", "'{value}' {problem}",
                                  {"value": value, "problem": problem, "code": "E017",
                                   "hint": "name a folder inside the project, relative to site.yml, e.g. theme"})
    return value


class Term(BaseModel):
    """One word of a vocabulary: its display title and what it covers."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="Display name, e.g. 'DeepSpeed'.")
    description: str = Field("", description="One sentence shown on the term's hub page.")
    url: str | None = Field(None, description="Upstream home page (systems only).")

    _check_url = field_validator("url")(lambda cls, v: v if v is None else check_url(v))

    def __repr__(self) -> str:   # every field, as pydantic's would, more cheaply (a page's key holds several)
        return f"Term(title={self.title!r}, description={self.description!r}, url={self.url!r})"


TermKey = Annotated[str, Field(pattern=KEBAB)]


class Vocabularies(BaseModel):
    """The closed word lists entries are checked against. Order here is display order."""

    model_config = ConfigDict(extra="forbid")
    categories: dict[TermKey, Term] = Field(description="What kind of failure (checkpointing, memory, ...).")
    systems: dict[TermKey, Term] = Field(description="Software the failure belongs to (deepspeed, pytorch, nccl, ...).")
    phases: dict[TermKey, Term] = Field(description="Lifecycle step where the failure surfaces.")
    severities: dict[TermKey, Term] = Field(description="How bad it is, most severe first.")
    tags: dict[TermKey, Term] = Field(description="Free topics that cut across categories.")
    relations: dict[TermKey, Term] = Field(
        default_factory=lambda: {
            "caused-by": Term(title="Caused by", description="This failure is a consequence of the other one."),
            "causes": Term(title="Causes", description="The other failure is a consequence of this one."),
            "often-confused-with": Term(title="Often confused with"),
            "see-also": Term(title="See also"),
        },
        description="Kinds of link between entries; 'caused-by' and 'causes' drive diagnosis ranking.")


class SiteConfig(BaseModel):
    """Everything a self-hoster sets in site.yml."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="Site name, shown in the header and the feed.")
    description: str = Field(description="One sentence for the home page, search engines and the feed.")
    url: str = Field(description="Public address of the site root. Its path part is the sub-path the site "
                                 "lives under, e.g. https://owner.github.io/rootcause/.")
    repository: str = Field(description="Repository holding entries/, for 'edit this page' and issue links.")
    branch: str = Field("main", description="Branch that 'edit this page' links point at.")
    language: str = Field("en", description="Language of the pages (html lang).")
    theme: str | None = Field(None, description="Folder with template or asset overrides; a file there "
                                                "replaces the bundled one of the same name.")
    output: str = Field("site", description="Folder the site is written to, replaced whole by each build: a folder "
                        "of its own inside the project, relative to site.yml (E017, E050).")
    healthy_logs: str | None = Field(None, description="Folder of logs from runs that did not fail; a signature "
                                     "that matches any of them is too generic (E036).")
    study: str | None = Field(None, description="Folder of the frequency study's tables (*.tsv: one row per sampled "
                              "issue thread and the failure it reports); shown as the site's frequency page.")
    recent: int = Field(8, ge=0, le=100, description="How many recently reviewed entries the home page lists.")
    page_size: int = Field(200, ge=10, le=100000, description="How many entries a list page (all entries, a "
                           "system, category or tag) shows; a longer list continues on entries/page/2/ and so on.")
    vocabularies: Vocabularies

    _check_url = field_validator("url")(lambda cls, v: check_site_url(v))
    _check_repository = field_validator("repository")(lambda cls, v: check_url(v))
    _check_folders = field_validator("theme", "healthy_logs", "study")(lambda cls, v: check_folder_name(v))

    @property
    def base_path(self) -> str:
        """The sub-path the site is served under, always starting and ending with '/'."""
        segments = [s for s in urlsplit(self.url).path.split("/") if s]  # never "//host": see check_site_url
        return "/" + "".join(f"{s}/" for s in segments)

    @property
    def base_url(self) -> str:
        return self.url if self.url.endswith("/") else self.url + "/"


def load_config(root: Path, name: str = "site.yml") -> tuple[SiteConfig | None, list[Diagnostic]]:
    path = root / name
    shown = display_path(path, root)
    located, problems = load_yaml(path, shown)
    if located is None:
        return None, problems
    config, problems = validate(SiteConfig, located, shown)
    if config is None:
        return None, problems
    for key in ("theme", "healthy_logs", "study"):
        value = getattr(config, key)
        problem = value and folder_problem(root, value)
        if problem:
            line, col = located.where((key,))
            problems.append(Diagnostic(shown, line, col, "E017", f"{key}: '{value}' {problem}",
                                       "name a folder inside the project, relative to site.yml"))
    found = output_problem(root, config)
    if found:
        code, problem = found
        line, col = located.where(("output",), key=True) if "output" in located.data else (1, 1)
        problems.append(Diagnostic(shown, line, col, code, f"output: '{config.output}' {problem}",
                                   "a build replaces its output folder whole: name a folder of its own inside the "
                                   "project, relative to site.yml, e.g. 'output: site' (build --out chooses another "
                                   "place for one build)"))
    return (None, problems) if problems else (config, problems)


#: what the output folder may neither be, hold nor lie inside, besides the folders site.yml names
PROJECT_FILES = ("site.yml", "entries", "content", ".rootcause-cache", ".git")


def output_problem(root: Path, config: SiteConfig) -> tuple[str, str] | None:
    """(code, why) when `output:` names no folder a build may replace: one outside the project
    (E017: a pull request's site.yml could have a maintainer's build delete any folder it can
    reach), the project itself or one holding or inside its inputs, or one that holds another
    project (E050). None when it is fine."""
    value = config.output
    problem = relative_path_problem(value)
    if problem:
        return "E017", problem
    folder = root / value
    if not is_inside(root, folder):
        return "E017", "leads out of the project folder (through a symbolic link)"
    out, base = folder.resolve(), root.resolve()
    if out == base:
        return "E050", "is the project folder itself"
    for name in (*PROJECT_FILES, config.theme, config.healthy_logs, config.study):
        if not name:
            continue
        held = (root / name).resolve()
        if out == held or out in held.parents:
            return "E050", f"is or holds the project's {name}"
        if held in out.parents:
            return "E050", f"lies inside the project's {name}"
    # another project's files (a built site holds entries/ too, but of folders and pages)
    if os.path.lexists(folder / "site.yml"):
        return "E050", "holds a site.yml, as a project does"
    for name, suffix in (("entries", ".yaml"), ("content", ".md")):
        try:
            with os.scandir(folder / name) as listing:
                if any(item.name.endswith(suffix) for item in listing):
                    return "E050", f"holds {name}/*{suffix}, as a project does"
        except OSError:
            continue
    return None
