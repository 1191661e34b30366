"""Issue 36, item 5: what `export --format loki` copies from entries cannot act as a template.

Loki's ruler expands every annotation as a Go text/template. Titles and summaries were copied
with each `{{` and `}}` replaced by an action printing it, which a `{` just before an escaped
`}}` turned into a broken action (`{}}`): Loki rejects the whole rule group, every alert lost;
and text that got through unescaped would run a template function such as `query` at alert
time. Here Go's own text/template parser reads every annotation the export writes: each must
parse, hold no action but a bare string literal, and print exactly the entry's text.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from conftest import REPO, SEED_ENTRY, make_project, needs, run_cli, tool

pytestmark = needs("go")

#: Reads {"cases": [[template, expected], ...]} on standard input and prints, for each, "" or why
#: the template is not a literal that prints the expected text: parsed as Loki's ruler parses an
#: annotation (text/template, default delimiters; `query` defined, as Prometheus's expander does).
CHECKER = r'''
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"text/template"
	"text/template/parse"
)

func literalOnly(node parse.Node) string {
	switch n := node.(type) {
	case *parse.ListNode:
		for _, child := range n.Nodes {
			if why := literalOnly(child); why != "" {
				return why
			}
		}
	case *parse.TextNode:
	case *parse.ActionNode:
		pipe := n.Pipe
		if len(pipe.Decl) != 0 || len(pipe.Cmds) != 1 || len(pipe.Cmds[0].Args) != 1 {
			return "an action that is not a bare literal: " + n.String()
		}
		if _, ok := pipe.Cmds[0].Args[0].(*parse.StringNode); !ok {
			return "an action that is not a string literal: " + n.String()
		}
	default:
		return fmt.Sprintf("%T, not text or a literal: %s", node, node.String())
	}
	return ""
}

func main() {
	var input struct{ Cases [][2]string }
	if err := json.NewDecoder(os.Stdin).Decode(&input); err != nil {
		panic(err)
	}
	funcs := template.FuncMap{"query": func(string) string { return "QUERY RAN" }}
	results := []string{}
	for _, c := range input.Cases {
		tmpl, err := template.New("annotation").Funcs(funcs).Parse(c[0])
		why := ""
		if err != nil {
			why = "does not parse: " + err.Error()
		} else if why = literalOnly(tmpl.Tree.Root); why == "" {
			var out bytes.Buffer
			if err := tmpl.Execute(&out, nil); err != nil {
				why = "does not run: " + err.Error()
			} else if out.String() != c[1] {
				why = fmt.Sprintf("prints %q, not %q", out.String(), c[1])
			}
		}
		results = append(results, why)
	}
	json.NewEncoder(os.Stdout).Encode(results)
}
'''

#: text an entry may hold that Go's templates read: actions, a function call, trim markers,
#: comments, braces around a would-be escape, quotes, backslashes, backquotes, control characters
HOSTILE = ['Loss {{ and }} accuracy', 'call {{ query "up" }} now', 'a {}} b', '{{{ x }}}', 'ends with {{',
           '}} first', 'trim {{- . -}} it', 'note {{/* c */}}', 'quote "}}" and \\ backslash {{',
           'raw `{{ .Labels }}` too', 'tab\there {{ "\\x41" }}', '{{"{{"}}', 'plain { braces } only']


def go_verdicts(tmp_path: Path, cases: list[tuple[str, str]]) -> list[str]:
    source = tmp_path / "checker.go"
    source.write_text(CHECKER, encoding="utf-8")
    env = {**os.environ, "GOCACHE": str(tmp_path / "go-cache"), "GOPATH": str(tmp_path / "go-path"),
           "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local", "GO111MODULE": "on", "CGO_ENABLED": "0"}
    done = subprocess.run([tool("go"), "run", str(source)], input=json.dumps({"cases": cases}).encode(),
                          capture_output=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def test_the_checker_catches_a_live_template(tmp_path: Path):
    """The check itself: unescaped text with an action fails it, in each way it can."""
    verdicts = go_verdicts(tmp_path, [
        ('{{ query "up" }}', 'x'), ("{{ and }}", "x"),
        ('a {{{"}}"}} b', "a {}} b"),   # what escaping each brace pair alone wrote for "a {}} b"
        ('{{"a"}}', "b"), ("a {}} b", "a {}} b"), ('{{"a {}} b"}}', "a {}} b")])
    assert verdicts[0].startswith("an action that is not")
    assert verdicts[1].startswith("an action that is not")
    assert verdicts[2].startswith("does not parse")
    assert verdicts[3].startswith("prints")
    assert verdicts[4:] == ["", ""]


def test_every_annotation_of_the_export_is_a_literal_of_the_entrys_text(tmp_path: Path):
    """The bundled entries, and one whose title and summary hold every hostile form: every
    annotation parses, holds only string literals and prints the text `export` took from the
    entry (its title and summary as plain text)."""
    from rootcause.entries.alerts import exportable
    from rootcause.entries.project import open_project

    root = make_project(tmp_path / "project")
    text = SEED_ENTRY.read_text(encoding="utf-8")
    text = text[:text.index("\nrelated:")] + text[text.index("\nreferences:"):]
    start = text.index("\ntitle: ") + 1
    text = text[:start] + f"title: {json.dumps(' '.join(HOSTILE[:7]))}\n" + text[text.index("\n", start) + 1:]
    start = text.index("\nsummary:") + 1
    end = text.index("\n", start) + 1
    while text[end] == " ":   # the summary's folded lines
        end = text.index("\n", end) + 1
    text = text[:start] + f"summary: {json.dumps(' '.join(HOSTILE[6:]))}\n" + text[end:]
    (root / "entries" / SEED_ENTRY.name).write_text(text, encoding="utf-8")

    cases: list[tuple[str, str]] = []
    for folder in (root, REPO):
        project, problems = open_project(folder)
        assert project is not None and not [d for d in problems if d.severity == "error"], problems[:3]
        rules, _skipped, _wrong = exportable(project)
        expected = {r.entry_id: r for r in rules}
        result = run_cli("--root", str(folder), "export", "--format", "loki")
        assert result.returncode == 0, result.stderr.decode()
        written = yaml.safe_load(result.stdout.decode())["groups"][0]["rules"]
        assert len(written) == len(rules)
        for rule in written:
            source = expected[rule["labels"]["entry"]]
            annotations = rule["annotations"]
            cases += [(annotations["summary"], source.title), (annotations["description"], source.summary)]
            if source.notes:
                cases.append((annotations["narrowed"], "; ".join(source.notes)))
    hostile_title = next(r for r in exportable(open_project(root)[0])[0]).title
    assert "{{ query" in hostile_title and "{}}" in hostile_title   # the entry's text reached the export as it is
    verdicts = go_verdicts(tmp_path, cases)
    wrong = [(case[0][:120], why) for case, why in zip(cases, verdicts) if why]
    assert wrong == []
    assert len(cases) > 2 * 150
