"""The long explanation of every diagnostic code: what it means, a wrong and a right example, how
to fix it. One source for two readers: `rootcause check --explain CODE` prints an explanation,
and the section "Checks and error codes" of `content/writing-entries.md` is generated from all
of them (`scripts/write_code_docs.py`; a test keeps the page equal to what it generates).

Each example is the text of one file, `file`: an entry file's or `site.yml`'s fields are laid
over a small valid project (`tests/test_explanations.py`, which runs `check` on every wrong
example and requires its code, and on every right one and requires none), so the examples are
what the checks really say, not what they were meant to say. A code that text cannot show (a
symbolic link, a folder that cannot be written) says why in `not_shown`.

Imported only by `check --explain` and the page generator: nothing else pays for the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from textwrap import fill

from .errors import CODES

#: the file the examples are laid over when nothing else is named: the project's one entry
ENTRY = "entries/worker-killed.yaml"


@dataclass(frozen=True)
class Explanation:
    code: str
    meaning: str
    wrong: str
    right: str
    fix: str
    #: the file the examples are written into; an entry file or site.yml takes the fields shown
    #: over the ones it has, any other file is the example whole
    file: str = ENTRY
    #: the command that reports it: `check`, or `build` for a problem of the output or templates
    command: str = "check"
    #: the code a retired one is now reported as
    now: str = ""
    #: the wrong example's encoding (E001 is about a file that is not UTF-8)
    wrong_encoding: str = "utf-8"
    #: why the wrong example cannot be run as a file (empty: it is run)
    not_shown: str = ""
    #: the file the right example is written into, where the file's name is the problem
    right_file: str = ""

    @property
    def title(self) -> str:
        return CODES[self.code]

    @property
    def language(self) -> str:
        return {".yaml": "yaml", ".yml": "yaml", ".md": "markdown", ".html": "jinja"}.get(
            self.file[self.file.rfind("."):], "text")

    def as_text(self) -> str:
        """What `check --explain` prints: plain text for a terminal, examples indented."""
        def block(text: str) -> str:
            return "\n".join(f"    {line}" if line else "" for line in text.splitlines())

        parts = [f"{self.code}: {self.title}", "", fill(self.meaning, 79), "",
                 f"Wrong ({self.file}):" if self.file else "Wrong:", "", block(self.wrong), "",
                 f"Right ({self.right_file}):" if self.right_file else "Right:", "", block(self.right), "",
                 fill(f"How to fix it: {self.fix}", 79)]
        if self.now:
            parts += ["", f"Reported now as {self.now}: rootcause check --explain {self.now}"]
        return "\n".join(parts) + "\n"

    def as_markdown(self) -> str:
        """The code's part of content/writing-entries.md."""
        fence = f"```{self.language}"
        return "\n".join([f"### {self.code}: {self.title}", "", self.meaning, "",
                          f"Wrong, in `{self.file}`:" if self.file else "Wrong:", "", fence, self.wrong, "```", "",
                          f"Right, in `{self.right_file}`:" if self.right_file else "Right:", "", fence, self.right,
                          "```", "", f"**Fix:** {self.fix}", ""])


def _block(text: str) -> str:
    """A file's text as written below: its first line starts right after the quotes, the others
    carry the source's 8 spaces of indentation, which go."""
    lines = text.splitlines()
    assert all(line.startswith(" " * 8) for line in lines[1:] if line), text
    return "\n".join([lines[0]] + [line[8:] for line in lines[1:]])


def _e(code: str, meaning: str, wrong: str, right: str, fix: str, **kw) -> Explanation:
    return Explanation(code, " ".join(meaning.split()), _block(wrong), _block(right), " ".join(fix.split()), **kw)


_ALL = [
    _e("E001", """The file is not UTF-8 text: it holds a NUL byte, or bytes that are not UTF-8 (a file saved
        as Latin-1 or Windows-1252, or binary data under a `.yaml` name).""",
       """title: "DataLoader worker killed: the café's host ran out of memory"   # saved as Latin-1""",
       """title: "DataLoader worker killed: the café's host ran out of memory"   # saved as UTF-8""",
       """Save the file as UTF-8 (every editor offers it); the position points at the first bad byte.""",
       wrong_encoding="latin-1"),
    _e("E002", """The file is larger than 512 KiB. An entry is a page a reader reads: a whole training log does
        not belong in it, and a file that large is refused before it is parsed.""",
       """signatures:
         - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
           examples:
             - log: |
                 ... 600 KiB of a training log ...""",
       """signatures:
         - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
           examples:
             - log: |
                 RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed.""",
       """Keep only the lines around the failure in an example (a traceback, the launcher's report); link
        the full log from the reference instead.""",
       not_shown="the wrong example would be 512 KiB long"),
    _e("E003", """The YAML does not parse, or the file holds more than one document (`---`). The most common cause
        is an unquoted value holding `: ` or ` #`, or starting with `{`, `[`, `*`, `&`, `!`, `%`, `@` or a
        backquote.""",
       """title: DataLoader worker killed: the host ran out of memory""",
       """title: "DataLoader worker killed: the host ran out of memory\"""",
       """Quote the value, or fix the indentation at the position given."""),
    _e("E004", """A key appears twice in the same mapping. YAML parsers disagree on which one wins, so the file
        is refused instead of silently keeping one.""",
       """title: DataLoader worker killed
        title: "DataLoader worker (pid N) is killed by signal: Killed\"""",
       """title: "DataLoader worker (pid N) is killed by signal: Killed\"""",
       """Remove one of the two, or merge what they say."""),
    _e("E005", """YAML anchors (`&name`) and aliases (`*name`) are not allowed: an alias hides where a value comes
        from, and nested aliases can expand a small file into gigabytes.""",
       """systems: &where [pytorch]
        tags: *where""",
       """systems: [pytorch]
        tags: [dataloader]""",
       """Write every value out in full."""),
    _e("E006", """Data is nested more than 32 levels deep, or one file holds too many values. An entry is a few
        levels deep; this protects the loader from files built to exhaust it.""",
       """tags: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[dataloader]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]""",
       """tags: [dataloader]""",
       """Check the indentation and the brackets at the position given."""),
    _e("E007", """The file is not a mapping of fields: it holds a list, a single value or nothing.""",
       """- id: shm-too-small
        - title: DataLoader bus error""",
       """id: shm-too-small
        title: DataLoader bus error""",
       """Start the file with `id: ...` and write the other fields one per line, without a leading dash.""",
       file="entries/shm-too-small.yaml"),
    _e("E008", """Not a regular file: a symbolic link (even one that leads nowhere), a folder named `*.yaml`, a
        named pipe, a device or a socket; or `entries/` or `content/` is a link leading out of the
        project. Such a file is never opened: a link in a pull request could make the build read any
        file of the machine that builds it.""",
       """entries/worker-killed.yaml -> /home/me/notes/worker-killed.yaml   (a symbolic link)""",
       """entries/worker-killed.yaml   (the file itself, committed)""",
       """Commit the file itself instead of a link to it.""", file="",
       not_shown="a symbolic link is not text"),
    _e("E010", """A field that the schema does not know, usually a misspelt one; the message suggests the nearest
        known name. Unknown fields are refused rather than ignored, so that a typo never silently drops
        what was written.""",
       """titel: "DataLoader worker (pid N) is killed by signal: Killed\"""",
       """title: "DataLoader worker (pid N) is killed by signal: Killed\"""",
       """Use the suggested name; `rootcause schema` writes the JSON Schema that lists every field."""),
    _e("E011", """A required field is missing, at the top of the entry or inside an item (a symptom needs both
        `observed` and `why`, a reference needs `kind`, `title` and `url`).""",
       """symptoms:
          - observed: The job dies a few minutes into the first epoch.""",
       """symptoms:
          - observed: The job dies a few minutes into the first epoch.
            why: Each worker holds a copy of the dataset, and host memory runs out as they fill.""",
       """Add the field the message names; `rootcause new` writes a template that holds every field."""),
    _e("E012", """A value has the wrong type or form: text where a list is expected, a list with too few items,
        a YAML tag (`!!python/...`), a number of more than 100 characters.""",
       """fix: []""",
       """fix:
          - Lower num_workers, or give the host more memory.""",
       """Write the value in the form the message and the schema ask for."""),
    _e("E013", """A category, system, phase, severity or tag that is not in the vocabulary `site.yml` declares.
        The vocabularies are what the site's filters and hub pages are made of, so a value outside them
        would make a page no one can reach.""",
       """category: memroy""",
       """category: memory""",
       """Use one of the values the message lists (it suggests the nearest), or add the new value to
        `site.yml` with its title and description."""),
    _e("E014", """The `id` differs from the file name. The id is the page's address, and the file name is how
        contributors find the entry: they must agree.""",
       """id: dataloader-worker-killed""",
       """id: worker-killed""",
       """Rename the file to `<id>.yaml`, or set the id to the file name."""),
    _e("E015", """A URL is not an absolute `http` or `https` address.""",
       """references:
          - kind: docs
            title: PyTorch data loading
            url: pytorch.org/docs/stable/data.html""",
       """references:
          - kind: docs
            title: PyTorch data loading
            url: https://pytorch.org/docs/stable/data.html""",
       """Write the full address, starting with `https://`."""),
    _e("E016", """A date (`added`, `reviewed`) is not a valid calendar date written as `YYYY-MM-DD`.""",
       """reviewed: 2026-13-45""",
       """reviewed: 2026-01-15""",
       """Write the date as year, month and day: `2026-01-15`."""),
    _e("E017", """A folder named in `site.yml` (`theme`, `healthy_logs`, `study`, `output`) is an absolute path, climbs out of
        the project with `..`, leads out of it through a symbolic link, or is not a folder. A build
        reads only the project's own files.""",
       """healthy_logs: ../../shared/logs""",
       """healthy_logs: healthy""",
       """Keep the folder inside the project and name it relative to `site.yml`.""",
       file="site.yml"),
    _e("E018", """An image (`![alt](src)`) in a Markdown field of an entry or a page. The site loads nothing from
        elsewhere and holds no pictures: an image would be a request to someone else's server from every
        reader.""",
       """summary: "Host memory runs out: ![graph](https://example.com/rss.png)\"""",
       """summary: "Host memory runs out: resident memory grows with every worker ([graph](https://example.com/rss.png)).\"""",
       """Describe what the picture shows in words, or link to it with `[text](address)`."""),
    _e("E020", """Two entry files declare the same `id`, so two pages would claim one address.""",
       """id: worker-killed""",
       """id: worker-killed-by-oom""",
       """Give each entry its own id (and its file the same name); if both describe one failure, merge
        them.""",
       file="entries/worker-killed-by-oom.yaml"),
    _e("E021", """A `related` item names an entry that does not exist (the message suggests the nearest id).""",
       """related:
          - id: shm-to-small
            relation: often-confused-with""",
       """related:
          - id: shm-too-small
            relation: often-confused-with""",
       """Correct the id, or remove the item if the entry was removed or renamed."""),
    _e("E022", """An entry lists itself in `related`.""",
       """related:
          - id: worker-killed
            relation: see-also""",
       """related:
          - id: shm-too-small
            relation: see-also""",
       """Remove the item."""),
    _e("E030", """A signature pattern is malformed: an unknown placeholder, a lone brace, an empty or overlong
        pattern, one of several lines, or a signature with not exactly one of `pattern`, `regex` and
        `lines`.""",
       """signatures:
          - pattern: "DataLoader worker (pid {pid}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """Use one of the placeholders `{int}`, `{float}`, `{hex}`, `{shape}`, `{ints}`, `{path}`,
        `{name}`, `{word}`, `{host}`, `{dtype}`, `{any}`, and write a literal brace as `{{` or `}}`."""),
    _e("E031", """A `regex` uses a feature that RE2 (the command line) and JavaScript (the browser) do not read
        alike, or one that can take exponential time: lookaround, backreferences, named groups, inline
        flags, `\\s`, `\\A`, `\\Z`, repetition nested in repetition, counts above 1000, non-ASCII
        literals.""",
       """signatures:
          - regex: 'DataLoader worker \\(pid [0-9]+\\) is killed by signal: (?!Terminated)'
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """signatures:
          - regex: 'DataLoader worker \\(pid [0-9]+\\) is killed by signal: Killed\\.'
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """Rewrite the expression without the feature; an `unless` pattern can veto a match where a
        lookaround was meant to. Better still, write a `pattern` with placeholders."""),
    _e("E032", """A `regex` does not compile: an unbalanced parenthesis or bracket, a dangling quantifier.""",
       """signatures:
          - regex: 'DataLoader worker \\(pid [0-9]+ is killed by signal: Killed)'
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """signatures:
          - regex: 'DataLoader worker \\(pid [0-9]+\\) is killed by signal: Killed'
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """Escape the characters meant literally (`\\(`, `\\)`, `\\[`, `\\.`), or write a `pattern`,
        where everything outside a placeholder is literal."""),
    _e("E033", """A signature does not match one of its own examples. The examples are the proof that the pattern
        finds the failure as real software prints it.""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) was killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """Copy the text exactly as printed, or loosen a part that varies with a placeholder such as
        `{int}` or `{name}`."""),
    _e("E034", """A pattern has too little literal text (fewer than 8 characters in one piece or 12 in all), or
        more than two `{any}`. The longest literal piece is what the scanner searches a log for; a short
        one would match unrelated lines.""",
       """signatures:
          - pattern: "worker {any} killed {any}"
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """Keep more of the message verbatim."""),
    _e("E035", """An example matches a signature of another entry that is not declared related, or two entries
        share the core of a signature. Either way a log would be diagnosed as the wrong failure. Listed
        at most 3 times per pair of entries and 200 times in all; the rest are counted.""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: |
                  ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
                  RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed.
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """Remove the copied line, or make the pattern distinctive (the wording, frame or value only this
        failure prints). Declare a relation only where the example really holds the other failure's own
        line (a wrapper, a consequence), never just to silence this."""),
    _e("E036", """A signature matches a line of a log of a healthy training run (the folder `healthy_logs` in
        `site.yml`): it would report a failure in a run that has none.""",
       """signatures:
          - pattern: "saving checkpoint to {path} finished"
            source: the training script's checkpoint hook
            examples:
              - log: "saving checkpoint to /ckpt/step20 finished, worker 3 killed by signal 9"
                assembled: train.py, save_checkpoint""",
       """signatures:
          - pattern: "saving checkpoint to {path} finished, worker {int} killed by signal {int}"
            source: the training script's checkpoint hook
            examples:
              - log: "saving checkpoint to /ckpt/step20 finished, worker 3 killed by signal 9"
                assembled: train.py, save_checkpoint""",
       """Keep more of the error's own wording in the pattern, so that normal output cannot match it."""),
    _e("E037", """A signature matches one of its own `counter_examples`, the log excerpts it must not match.""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: {word}"
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler
            counter_examples:
              - "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Terminated.\"""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler
            counter_examples:
              - "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Terminated.\"""",
       """Make the pattern more specific, or add an `unless` pattern that vetoes the counter-example."""),
    _e("E038", """`persistent` (a warning that turns into a failure when repeated) is set on an entry whose
        `role` is not `warning`.""",
       """role: cause
        persistent: {count: 50, within: 500}""",
       """role: cause""",
       """Remove `persistent`, or set `role: warning` if the text is a warning that only hurts when
        repeated."""),
    _e("E039", """A pattern or regex that a JavaScript engine would read differently from RE2: a character class
        holding characters beyond U+FFFF, such as `[😀-😂]` (JavaScript sees each as two UTF-16 code
        units, so a `RegExp` reads a range between surrogate halves and refuses the whole signatures
        file), or half of a surrogate pair written as an escape (`\\ud83d`).""",
       """signatures:
          - regex: 'DataLoader worker \\(pid [0-9]+\\) is killed by signal: [😀-😂]'
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: 😀"
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """signatures:
          - regex: 'DataLoader worker \\(pid [0-9]+\\) is killed by signal: [A-Za-z]+'
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """Write the characters as alternatives (`(😀|😁|😂)`), or match them with a placeholder."""),
    _e("E040", """A page in `content/` is malformed: front matter that is not closed, not a mapping, or holds a
        key other than `title`, `description`, `order` and `tab`.""",
       """---
        title: Running on a cluster
        colour: blue
        ---
        How to run the checks on a cluster.""",
       """---
        title: Running on a cluster
        ---
        How to run the checks on a cluster.""",
       """Keep to the four front matter keys and close the front matter with a line holding only `---`.""",
       file="content/cluster.md"),
    _e("E041", """A template of the site's theme folder does not compile or does not render, or reached outside
        the sandbox that templates of a theme folder run in.""",
       """{% extends "base.html" %}
        {% block content %}<h1>Page not found{% if page.title %}: {{ page.title }{% endif %}</h1>{% endblock %}""",
       """{% extends "base.html" %}
        {% block content %}<h1>Page not found</h1>{% endblock %}""",
       """Fix the template at the line given; compare it with the bundled template of the same name.""",
       file="theme/templates/404.html", command="build"),
    _e("E042", """A log example does not say where it comes from, or names more than one origin. Every example
        carries exactly one of `posted` (copied from a public thread), `reproduced` (printed by a run the
        authors made) or `assembled` (put together from the source).""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed.\"""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                posted: https://github.com/pytorch/pytorch/issues/8976""",
       """Add the one origin that is true: the thread's address, the versions and command of your run,
        or the upstream file and function."""),
    _e("E043", """An example's origin does not name what it must: `reproduced` names no versions, `assembled`
        names no source file.""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                reproduced: on our cluster""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                reproduced: "torch 2.5.1+cu124, Python 3.11: python train.py --num-workers 16\"""",
       """Name the versions and the command for `reproduced`, the file (and function) for
        `assembled`."""),
    _e("E044", """An `affected` range names no `ref`, or a `ref` that is not among the entry's references: a
        version range is a claim, and a claim needs its source.""",
       """affected:
          - system: pytorch
            fixed: "2.1.0\"""",
       """references:
          - kind: pull-request
            title: "pytorch #103223: report which worker died (v2.1.0)"
            url: https://github.com/pytorch/pytorch/pull/103223
        affected:
          - system: pytorch
            fixed: "2.1.0"
            ref: https://github.com/pytorch/pytorch/pull/103223""",
       """Add `ref:` with the address of the reference that states the range, and list that reference."""),
    _e("E045", """A version stated next to a system's name ("fixed in torch 2.4", "transformers>=4.46") appears in
        no reference's title or address, no `affected` range and no example's origin.""",
       """summary: "Host memory runs out; fixed in torch 2.4 and later.\"""",
       """summary: "Host memory runs out; lower num_workers.\"""",
       """Cite the release note, pull request or tagged source that names the version, or leave the
        number out."""),
    _e("E046", """A row of the frequency study (`study/*.tsv`) is malformed: the header, the number of columns, the
        thread's address, the system, the class id, an empty summary, or a thread listed twice.""",
       """url\tsystem\tquery\tclass\tsummary
        github.com/pytorch/pytorch/issues/8976\tpytorch\tworker killed\tworker-killed\tWorkers die when host memory runs out.""",
       """url\tsystem\tquery\tclass\tsummary
        https://github.com/pytorch/pytorch/issues/8976\tpytorch\tworker killed\tworker-killed\tWorkers die when host memory runs out.""",
       """Correct the row as the message says: one tab between cells, the full thread address, a system of
        `site.yml`, the class as a kebab-case entry id, a one-sentence summary.""",
       file="study/threads.tsv"),
    _e("E047", """A GitHub reference's address is not canonical (`issues/N`, `pull/N`, `commit/SHA`,
        `blob/TAG/path`, `releases/tag/V`), or not of the kind the reference claims.""",
       """references:
          - kind: pull-request
            title: "pytorch #8976: DataLoader worker is killed by signal"
            url: https://github.com/pytorch/pytorch/issues/8976""",
       """references:
          - kind: issue
            title: "pytorch #8976: DataLoader worker is killed by signal"
            url: https://github.com/pytorch/pytorch/issues/8976""",
       """Link the issue or pull request itself, and set `kind` to what it is."""),
    _e("E048", """The same reference address is listed twice.""",
       """references:
          - kind: issue
            title: "pytorch #8976: DataLoader worker is killed by signal"
            url: https://github.com/pytorch/pytorch/issues/8976
          - kind: issue
            title: the same thread
            url: https://github.com/pytorch/pytorch/issues/8976""",
       """references:
          - kind: issue
            title: "pytorch #8976: DataLoader worker is killed by signal"
            url: https://github.com/pytorch/pytorch/issues/8976""",
       """List each source once."""),
    _e("E049", """An issue or pull request cited in the prose ("accelerate #2313", "PR #1958", a bare "#596") is
        not among the references.""",
       """summary: "Host memory runs out; see PR #4321.\"""",
       """summary: "Host memory runs out; lower num_workers.\"""",
       """Add the issue or pull request to `references` with its address, or remove the citation."""),
    _e("E050", """The output folder is unsafe to replace: it is the project folder or one of its parents, it
        holds or lies inside one of the build's inputs (`entries/`, `content/`, a theme) or another
        project, it exists and is not a folder, or it holds files rootcause did not write; or a path
        would leave it.
        A build replaces the whole folder, so it refuses one it could not have made.""",
       """output: .""",
       """output: site""",
       """Name a folder of its own for the site, e.g. `site`, and keep other files out of it.""",
       file="site.yml", command="build"),
    _e("E051", """The output folder (or the folder holding it), the schema file or a new entry cannot be written:
        the file system is read-only, the permission is missing or the disk is full.""",
       """output: /usr/share/rootcause-site   (a folder this user cannot write)""",
       """output: site""",
       """Write somewhere this user may, or free space.""",
       file="site.yml", command="build", not_shown="it depends on the machine's permissions, not on a file"),
    _e("E052", """Another build is writing the same output folder and did not finish in time: two builds never
        write one folder at once.""",
       """rootcause build & rootcause build --wait 0""",
       """rootcause build --wait 60""",
       """Wait for the other build, or give `build --wait` more seconds.""",
       file="", command="build", not_shown="it needs two builds running at once"),
    _e("E053", """The signatures do not fit the `role`. An entry with `role: cause`, `consequence` or `warning`
        needs at least one signature; an entry with `role: symptom` (a failure that prints no error) has
        none, and needs `symptoms` and `confirm` (what to observe and how to measure it). Pointed at
        `signatures` when the key is there, else at `role`.""",
       """role: symptom""",
       """role: cause""",
       """Give a failure that prints an error its signatures; describe one that prints none by its
        symptoms and the measurements that confirm it, without signatures."""),
    _e("E054", """An alias is empty, more than one line, longer than 60 characters or 8 search words, has no
        searchable word (only stop words, punctuation or long numbers), or repeats another alias of the
        entry as search reads it (case, hyphens and plurals do not count).""",
       """aliases: ["worker OOM", "Worker-OOM"]""",
       """aliases: ["worker OOM", "dataloader killed"]""",
       """Keep one of each name, short and searchable."""),
    _e("E055", """The alert rule `rootcause export` would write for a signature matches a line of a healthy log or
        of another entry's example (a declared relation allows the latter, as for E035). A single-line
        signature is exported as it is; a multi-line one only through its `alert_line`, the one of its
        `lines` that identifies the failure alone.""",
       """signatures:
          - lines:
              - pattern: "saving checkpoint to {path} finished in {float} s"
              - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            alert_line: 1
            within: 5
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: |
                  saving checkpoint to /ckpt/step20 finished in 3.0 s
                  RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed.
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """signatures:
          - lines:
              - pattern: "saving checkpoint to {path} finished in {float} s"
              - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            alert_line: 2
            within: 5
            source: torch/utils/data/_utils/signal_handling.py
            examples:
              - log: |
                  saving checkpoint to /ckpt/step20 finished in 3.0 s
                  RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed.
                assembled: torch/utils/data/_utils/signal_handling.py, _set_SIGCHLD_handler""",
       """Narrow the exported line, or name as `alert_line` the line that only this failure prints."""),
    _e("E056", """An example, pasted the ways real pastes differ (behind a rank, Slurm, host or timestamp prefix,
        quoted with `> `, with CRLF line ends, cut right after the signature's core, behind
        `RuntimeError:` or no exception class, its placeholder numbers shown as `N`), makes `diagnose`
        name another entry first, or none, where the example itself names this entry. `check` runs it
        only once the entries are otherwise sound. Below, the core derived from the pattern is `Bad
        StatusOr access: UNKNOWN`: shorter than 30 characters, it counts only on an error line, and the
        example cut after it is no error line (it starts with backquotes), so it names no entry.""",
       """signatures:
          - pattern: "Bad StatusOr access: UNKNOWN: TPU initialization failed: {any}"
            source: torch_xla's PJRT TPU client, reached from the first device query
            examples:
              - log: "```RuntimeError: Bad StatusOr access: UNKNOWN: TPU initialization failed: Invalid --2a886c8_slice_builder_worker_addresses specified. Expected 4 worker addresses, got 1.``` when using kaggle tpu"
                posted: https://github.com/Lightning-AI/pytorch-lightning/issues/20244""",
       """signatures:
          - pattern: "Bad StatusOr access: UNKNOWN: TPU initialization failed: {any}"
            core: ''
            source: torch_xla's PJRT TPU client, reached from the first device query
            examples:
              - log: "```RuntimeError: Bad StatusOr access: UNKNOWN: TPU initialization failed: Invalid --2a886c8_slice_builder_worker_addresses specified. Expected 4 worker addresses, got 1.``` when using kaggle tpu"
                posted: https://github.com/Lightning-AI/pytorch-lightning/issues/20244""",
       """Fix the pattern, or declare its `core`: a longer span that only this failure prints, or `''`
        for none (as here, where the whole message is the failure). For a signature with `frames`, the
        example is also cut just before its exception line."""),
    _e("E057", """A declared raising frame (`frames:`) is not the frame right above the signature's line in any of
        its examples (for a C++ source file: a raising frame of a C++ backtrace in an example that matches,
        c10's `Exception raised from F at FILE:N` or the first `frame #N:` line past c10's error machinery),
        or two entries declare the same frame.""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            frames:
              - file: torch/utils/data/dataloader.py
                function: _try_get_data
                releases: torch 2.0 and later
            source: torch/utils/data/dataloader.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed."
                assembled: torch/utils/data/dataloader.py, _MultiProcessingDataLoaderIter._try_get_data""",
       """signatures:
          - pattern: "DataLoader worker (pid {int}) is killed by signal: Killed."
            frames:
              - file: torch/utils/data/dataloader.py
                function: _try_get_data
                releases: torch 2.0 and later
            source: torch/utils/data/dataloader.py
            examples:
              - log: |
                  Traceback (most recent call last):
                    File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
                      raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e
                  RuntimeError: DataLoader worker (pid 2817) is killed by signal: Killed.
                assembled: torch/utils/data/dataloader.py, _MultiProcessingDataLoaderIter._try_get_data""",
       """Add a real example traceback that shows the frame, correct the file or function from the
        source, or keep the frame on the one entry whose error it raises."""),
    _e("E058", """A field still holds the placeholder `TODO` that `rootcause new` (and `new --from-log`) writes:
        the title, the summary, the root cause, a fix or confirm step or its command, a reference's
        title or address, a signature's source, an example's origin, any other prose. Patterns, log
        examples and code examples are not searched, since software may print the word itself.""",
       """root_cause: TODO""",
       """root_cause: Each worker holds a copy of the dataset, and host memory runs out as they fill.""",
       """Write what the placeholder stands for, or remove the item."""),
    _e("E059", """A page in `content/` is named like one of the site's own pages or files (`diagnose`, `entries`,
        `search`, `coverage`, `frequency`, ...): its page would take that address, and a contributor's
        Markdown would be served where readers expect the site's own page. The name is compared without
        regard to case.""",
       """---
        title: How to diagnose a hang
        ---
        Start with the watchdog's last line.""",
       """---
        title: How to diagnose a hang
        ---
        Start with the watchdog's last line.""",
       """Rename the page (`content/diagnosing-hangs.md`); its address follows its file name.""",
       file="content/diagnose.md", right_file="content/diagnosing-hangs.md"),
    _e("W001", """A warning: two entries read alike (their strongest search terms agree by 60% or more) and are
        not declared related: likely one failure written twice. Below, `worker-killed-again` was made by
        copying `worker-killed` and giving it another signature; its title, summary, root cause and fix
        are still those of `worker-killed`.""",
       """signatures:
          - pattern: "DataLoader worker (pid(s) {any}) exited unexpectedly"
            source: torch/utils/data/dataloader.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid(s) 2817, 2818) exited unexpectedly"
                assembled: torch/utils/data/dataloader.py, _MultiProcessingDataLoaderIter._try_get_data""",
       """signatures:
          - pattern: "DataLoader worker (pid(s) {any}) exited unexpectedly"
            source: torch/utils/data/dataloader.py
            examples:
              - log: "RuntimeError: DataLoader worker (pid(s) 2817, 2818) exited unexpectedly"
                assembled: torch/utils/data/dataloader.py, _MultiProcessingDataLoaderIter._try_get_data
        related:
          - id: worker-killed
            relation: often-confused-with""",
       """Merge the two entries if they are one failure. If they are not, write in each what tells it
        apart (its own title, summary and root cause) and declare the relation, as in the right example.""",
       file="entries/worker-killed-again.yaml"),
    _e("W002", """Retired: was the warning for a version in the prose that no source ties; that is now the error
        E045.""",
       """summary: "Host memory runs out; fixed in torch 2.4 and later.\"""",
       """summary: "Host memory runs out; lower num_workers.\"""",
       """As for E045.""", now="E045"),
    _e("W003", """Retired: was the warning for an issue or pull request cited in the prose but not listed; that
        is now the error E049.""",
       """summary: "Host memory runs out; see PR #4321.\"""",
       """summary: "Host memory runs out; lower num_workers.\"""",
       """As for E049.""", now="E049"),
]

EXPLANATIONS: dict[str, Explanation] = {e.code: e for e in _ALL}

#: what the page says before the codes; the page's section is this, then every code in order
INTRODUCTION = """\
`rootcause check` prints every problem of every file in one run, as
`path:line:column: error[CODE]: what is wrong — how to fix it`, and exits with status 1 if there
is any. `rootcause check --explain E033` prints a code's explanation below; `--format github`
prints annotations for a pull request; `--format json` is for tools.

Each wrong example below is checked: the test suite lays it over a small valid project and
requires `check` to report its code, and the right one to report none."""

HEADING = "## Checks and error codes"


def page_section() -> str:
    """The section of content/writing-entries.md that explains the codes (its last)."""
    return "\n".join([HEADING, "", INTRODUCTION, ""] + [EXPLANATIONS[c].as_markdown() for c in
                                                     sorted(CODES, key=lambda c: (c[0] == "W", c))])
