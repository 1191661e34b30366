#!/usr/bin/env python3
"""Synthetic but realistic entries for the benchmarks, in three forms with the same content:

- a rootcause project (site.yml copied from the repository, without `healthy_logs` and `study`, and
  entries/*.yaml),
- a Hugo site (hugo.toml, content/entries/*.md with front matter, and a minimal theme-less
  layout written here: home, entry page, lists, taxonomy pages, RSS, sitemap and a JSON index
  for search, i.e. the same kinds of output rootcause writes),
- a MkDocs-Material site (mkdocs.yml, docs/entries/*.md, the built-in search plugin).

Every entry has a title, summary, 1-3 signatures (placeholders, matching examples with rank
prefixes and tracebacks, sometimes a multi-line signature or counter-examples), symptoms, root
cause, misdiagnoses, confirm and fix steps with commands, prevention, code examples, FAQ,
related links to other synthetic entries, references and affected versions, using the
vocabulary ids of site.yml. Every signature carries an identifier that is unique to its entry
inside its longest literal piece, so no example matches another entry's signature.

    python bench/synth.py 1000 /tmp/rc-synth-1000          # all three forms
    python bench/synth.py 1000 /tmp/x --only rootcause     # just the project

Deterministic for a given (N, seed).
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import shutil
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent

# -- word lists -----------------------------------------------------------------------------------
COMPONENTS = [
    "ProcessGroupNCCL", "ZeroOptimizer", "FlatParamHandle", "DataLoaderIter", "CheckpointEngine", "PipelineModule",
    "CachingAllocator", "ColumnParallelLinear", "AutocastState", "GradScaler", "DistributedSampler", "RendezvousHandler",
    "TCPStore", "ElasticAgent", "InductorScheduler", "DeviceMesh", "DTensorSpec", "OffloadManager", "SafeOpenLoader",
    "TokenizerFast", "TrainerCallback", "AcceleratorState", "MegatronOptimizer", "BucketReducer", "ShardedTensor",
    "FusedAdamKernel", "ActivationCheckpoint", "StreamExecutor", "CommWatchdog", "ParamCoordinator", "LossScaler",
    "GatherManager", "UniversalConverter", "SrunLauncher", "CollectiveBarrier", "EmbeddingSharder", "LoraInjector",
    "FlashAttnKernel", "MoeDispatcher", "ContextParallel",
]
VERBS = [
    "gather", "scatter", "reduce", "flush", "prefetch", "partition", "allocate", "release", "resize", "register",
    "restore", "serialize", "broadcast", "validate", "reshard", "offload", "pin", "unpin", "fuse", "split",
    "merge", "rebuild", "compile", "trace", "sync", "drain", "rotate", "bucketize", "dispatch", "materialize",
    "checkpoint", "wrap", "unwrap", "load", "save", "convert", "clip", "scale", "quantize", "launch",
]
NOUNS = [
    "partition", "bucket", "shard", "buffer", "grads", "params", "states", "streams", "ranks", "groups",
    "handles", "tensors", "slices", "chunks", "blocks", "pages", "segments", "workers", "batches", "indices",
    "offsets", "weights", "moments", "masters", "scalers", "hooks", "modules", "layers", "experts", "heads",
    "tokens", "embeddings", "caches", "queues", "barriers", "stores", "keys", "files", "manifests", "metadata",
    "flatparams", "views", "mappings", "replicas", "microbatches", "stages", "channels", "peers", "comms", "events",
]
OBJECTS = [
    "flat parameter", "optimizer state", "gradient bucket", "rank table", "process group", "CUDA stream",
    "rendezvous key", "checkpoint shard", "pinned buffer", "device mesh", "loss scale", "activation buffer",
    "parameter partition", "state dict", "expert table", "attention mask", "tensor view", "memory pool",
    "dataloader worker", "NCCL communicator",
]
ACTIONS = [
    "failed to allocate", "timed out waiting for", "could not gather", "received a mismatched", "lost track of",
    "cannot reshard", "refused to load", "found an unexpected", "could not register", "failed to synchronize",
    "overflowed while scaling", "cannot map", "detected a corrupted", "rejected the", "could not pin",
]
PHRASES = [
    "the job keeps running but", "every rank reports", "only rank 0 shows", "the first step succeeds and",
    "the loss goes flat after", "memory grows until", "the launcher restarts workers when",
]
EXCEPTIONS = ["RuntimeError", "ValueError", "AssertionError", "KeyError", "torch.distributed.DistBackendError",
              "torch.OutOfMemoryError", "OSError", "TypeError", "IndexError", "NotImplementedError"]
FILES = ["engine.py", "stage3.py", "partition_parameters.py", "distributed_c10d.py", "fully_sharded_data_parallel.py",
         "trainer.py", "module.py", "checkpointing.py", "dataloader.py", "optimizer.py", "utils.py", "api.py"]
FNS = ["step", "backward", "forward", "_run_ddp_forward", "load_checkpoint", "save_checkpoint", "all_reduce",
       "_post_backward_hook", "wrapper", "__next__", "_fetch", "train", "_inner_training_loop"]
HOSTS = ["node-1", "node-2", "gpu-a17", "worker-3", "dgx-04", "hpc-n112"]
NAMES = ["module.layers.3.mlp.fc1.weight", "lm_head.weight", "model.embed_tokens.weight", "encoder.block.7.attn.q",
         "transformer.h.11.ln_1.bias", "experts.12.w2"]
DTYPES = ["torch.bfloat16", "torch.float16", "torch.float32", "torch.int64"]
WORDS = ["cuda:0", "cuda:3", "gloo", "nccl", "fp16", "bf16", "auto", "main", "overlap_comm"]
PATHS = ["/data/ckpt/global_step1200", "/scratch/run7/ckpt/latest", "./output/checkpoint-500/pytorch_model.bin",
         "/mnt/shared/exp/zero_pp_rank_3_mp_rank_00_optim_states.pt"]

SAMPLES = {
    "int": lambda r: str(r.choice([r.randint(0, 9), r.randint(10, 999), r.randint(1000, 99999)])),
    "float": lambda r: r.choice([f"{r.uniform(0, 10):.4f}", f"{r.uniform(1, 9):.2f}e-0{r.randint(1, 8)}", "nan", "inf"]),
    "hex": lambda r: hex(r.getrandbits(40)),
    "shape": lambda r: f"torch.Size([{r.choice([0, 512, 1024, 4096])}, {r.choice([128, 256, 4096])}])",
    "ints": lambda r: f"[{r.randint(1, 64)}, {r.randint(1, 4096)}]",
    "path": lambda r: r.choice(PATHS),
    "name": lambda r: r.choice(NAMES),
    "word": lambda r: r.choice(WORDS),
    "host": lambda r: r.choice(HOSTS),
    "dtype": lambda r: r.choice(DTYPES),
}

# A template is a list of parts: plain strings are literal text, "{name}" is a placeholder.
# "%C" is the component, "%F" the entry's unique function name, "%A" an action, "%O" an object,
# "%E" an exception class. Each template keeps "%F" in its longest literal piece.
TEMPLATES = [
    ["%E: %C.%F(): %A %O for ", "{name}", ": expected ", "{int}", " elements, got ", "{int}"],
    ["%E: [%C] %A %O in %F after ", "{int}", " ms on ", "{word}"],
    ["%E: %F: %O of shape ", "{shape}", " does not match the %C layout ", "{shape}"],
    ["[%C] %F %A %O (rank ", "{int}", " of ", "{int}", ", device ", "{word}", ")"],
    ["%E: %C.%F: %A %O at ", "{path}"],
    ["%E: %O dtype ", "{dtype}", " is not supported by %C.%F (expected ", "{dtype}", ")"],
    ["%C::%F() %A %O: error code ", "{hex}", " on host ", "{host}"],
    ["%E: %C %F %A %O; set ", "{name}", " or reduce the bucket size below ", "{int}", " MB"],
    ["%E: In %F, %C %A %O ", "{ints}", " with loss scale ", "{float}"],
]
MULTI = [
    ["[%C] %F: retrying %O after ", "{int}", " ms (attempt ", "{int}", ")"],
    ["%E: %C.%F gave up: %A %O after ", "{int}", " retries"],
]
HEALTHY = ["[%C] %F completed %O in ", "{int}", " ms"]


@dataclass
class Signature:
    pattern: str | None = None
    lines: list[str] | None = None
    examples: list[str] = field(default_factory=list)
    counter_examples: list[str] = field(default_factory=list)
    source: str = ""


def unique_functions(n: int, rng: random.Random) -> list[str]:
    """n distinct verb_noun_noun identifiers (without underscores inside the words)."""
    combos = len(VERBS) * len(NOUNS) * (len(NOUNS) - 1)
    if n > combos:
        raise SystemExit(f"at most {combos} entries")
    chosen = rng.sample(range(combos), n)
    names = []
    for c in chosen:
        v, rest = divmod(c, len(NOUNS) * (len(NOUNS) - 1))
        a, b = divmod(rest, len(NOUNS) - 1)
        b = b if b < a else b + 1
        names.append(f"_{VERBS[v]}_{NOUNS[a]}_{NOUNS[b]}")
    return names


def _fill(template: list[str], subs: dict[str, str]) -> list[str]:
    out = []
    for part in template:
        if part.startswith("{") and part.endswith("}") and part[1:-1] in SAMPLES:
            out.append(part)
        else:
            for key, value in subs.items():
                part = part.replace(key, value)
            out.append(part)
    return out


def _pattern(parts: list[str]) -> str:
    return "".join(p if (p.startswith("{") and p[1:-1] in SAMPLES) else p.replace("{", "{{").replace("}", "}}")
                   for p in parts)


def _line(parts: list[str], rng: random.Random) -> str:
    return "".join(SAMPLES[p[1:-1]](rng) if (p.startswith("{") and p[1:-1] in SAMPLES) else p for p in parts)


def _prefix(rng: random.Random, rank: int) -> str:
    style = rng.randrange(5)
    if style == 0:
        return f"[rank{rank}]: "
    if style == 1:
        return f"{rank}: "
    if style == 2:
        return f"[2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 1{rng.randint(0, 9)}:0{rng.randint(0, 9)}:3{rng.randint(0, 9)},{rng.randint(100, 999)}] [ERROR] [Rank {rank}] "
    if style == 3:
        return f"{rng.choice(HOSTS)}: [default{rank}]:"
    return ""


def _traceback(rng: random.Random, prefix: str, final: str) -> str:
    lines = [prefix + "Traceback (most recent call last):"]
    for _ in range(rng.randint(1, 3)):
        lines.append(prefix + f'  File "site-packages/{rng.choice(FILES)}", line {rng.randint(10, 3000)}, in {rng.choice(FNS)}')
        lines.append(prefix + f"    return self.{rng.choice(FNS)}(*args, **kwargs)")
    lines.append(prefix + final)
    return "\n".join(lines)


@dataclass
class Synth:
    n: int
    seed: int = 7

    def __post_init__(self):
        base = random.Random(self.seed)
        self.functions = unique_functions(self.n, base)
        self.vocab = yaml.safe_load((REPO / "site.yml").read_text(encoding="utf-8"))["vocabularies"]
        self.ids = []
        for i, fn in enumerate(self.functions):
            words = fn.strip("_").split("_")
            self.ids.append(f"{'-'.join(words)}-{i:05d}")

    # -- one entry as plain data (the schema's field names) ------------------------------------
    def entry(self, i: int) -> dict:
        r = random.Random(self.seed * 1_000_003 + i)
        vocab = self.vocab
        fn = self.functions[i]
        comp = r.choice(COMPONENTS)
        obj = r.choice(OBJECTS)
        action = r.choice(ACTIONS)
        exc = r.choice(EXCEPTIONS)
        subs = {"%C": comp, "%F": fn, "%A": action, "%O": obj, "%E": exc}
        category = r.choice(list(vocab["categories"]))
        systems = r.sample(list(vocab["systems"]), r.randint(1, 3))
        phase = r.choice(list(vocab["phases"]))
        severity = r.choice(list(vocab["severities"]))
        tags = r.sample(list(vocab["tags"]), r.randint(1, 4))
        phase_title = vocab["phases"][phase]["title"].lower()
        system_title = vocab["systems"][systems[0]]["title"]
        title = f"{system_title} {comp} {action} {obj} in {fn} during {phase_title}"[:120]

        signatures = []
        templates = r.sample(range(len(TEMPLATES)), r.randint(1, 3))
        for k, t in enumerate(templates):
            parts = _fill(TEMPLATES[t], subs)
            sig: dict = {}
            if k == 1 and r.random() < 0.35:
                steps = [_fill(m, subs) for m in MULTI]
                sig["lines"] = [{"pattern": _pattern(s)} for s in steps]
                sig["within"] = 40
                examples = []
                for _ in range(r.randint(1, 2)):
                    rank = r.randint(0, 15)
                    p = _prefix(r, rank)
                    mid = [p + f"[INFO] step {r.randint(1, 9999)} loss {r.uniform(1, 4):.4f}" for _ in range(r.randint(0, 3))]
                    examples.append({"log": "\n".join([p + _line(steps[0], r), *mid, p + _line(steps[1], r)]),
                                     "assembled": "generated by bench/synth.py"})
                sig["examples"] = examples
            else:
                sig["pattern"] = _pattern(parts)
                examples = []
                for _ in range(r.randint(1, 2)):
                    rank = r.randint(0, 15)
                    p = _prefix(r, rank)
                    final = _line(parts, r)
                    examples.append({"log": _traceback(r, p, final) if r.random() < 0.6 else p + final,
                                     "assembled": "generated by bench/synth.py"})
                sig["examples"] = examples
                if r.random() < 0.4:
                    sig["counter_examples"] = [_line(_fill(HEALTHY, subs), r)]
            sig["source"] = (f"`{comp}.{fn}` in {r.choice(systems)} (`{r.choice(FILES)}`); reproduced on "
                             f"{vocab['systems'][systems[0]]['title']} {r.randint(0, 3)}.{r.randint(0, 30)}.")
            signatures.append(sig)

        def cmd() -> str:
            return r.choice([
                f"python -c \"import torch; print(torch.__version__, torch.cuda.device_count())\"",
                f"grep -n -F '{fn}' train.log | head",
                f"torchrun --nproc_per_node={r.choice([2, 4, 8])} train.py --{r.choice(NOUNS)}-size {r.randint(1, 64)}",
                f"export NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL\npython train.py --config configs/{r.choice(NOUNS)}.yaml",
                f"deepspeed --num_gpus {r.choice([2, 4, 8])} train.py --deepspeed ds_config.json",
                f"nvidia-smi --query-gpu=memory.used,memory.total --format=csv",
            ])

        entry = {
            "id": self.ids[i],
            "title": title,
            "summary": (f"`{comp}` {action} {obj} when `{fn}` runs during {phase_title}, because "
                        f"{r.choice(PHRASES)} the {r.choice(OBJECTS)} is still owned by another {r.choice(NOUNS)}. "
                        f"Set `{r.choice(NOUNS)}_{r.choice(NOUNS)}` to {r.randint(1, 64)} or upgrade "
                        f"{system_title}, then resume from the last good checkpoint."),
            "category": category,
            "systems": systems,
            "phase": phase,
            "severity": severity,
            "role": "consequence" if i % 10 == 9 else "cause",
            "tags": tags,
            "signatures": signatures,
            "symptoms": [{"observed": f"{r.choice(PHRASES).capitalize()} `{comp}` logs `{action} {obj}` "
                                      f"{r.randint(2, 50)} times per step.",
                          "why": f"Each {r.choice(NOUNS)} retries the {r.choice(OBJECTS)} independently; "
                                 f"the {obj} is shared by all ranks."}
                         for _ in range(r.randint(2, 4))],
            "root_cause": "\n\n".join(
                textwrap.fill(f"`{comp}` keeps one {obj} per {r.choice(NOUNS)[:-1] or 'rank'} and calls `{fn}` "
                              f"from `{r.choice(FILES)}` on every {r.choice(['step', 'micro-batch', 'save', 'load'])}. "
                              f"When {r.choice(PHRASES)} the {r.choice(OBJECTS)} is resized, the {obj} still points "
                              f"at the old {r.choice(NOUNS)}, so the next `{r.choice(FNS)}` {action} it. "
                              f"This changed in {system_title} {r.randint(0, 3)}.{r.randint(0, 30)}.", 100)
                for _ in range(r.randint(1, 3))),
            "misdiagnosis": [{"assumption": f"The {r.choice(OBJECTS)} is too small, so people raise "
                                            f"`{r.choice(NOUNS)}_{r.choice(NOUNS)}`.",
                              "reality": f"The size is fine; `{fn}` reads a stale {obj}. Raising limits only "
                                         f"delays the failure by {r.randint(2, 90)} steps."}
                             for _ in range(r.randint(1, 3))],
            "confirm": [{"step": f"Check that {r.choice(PHRASES)} `{comp}` reports the {obj}.", "command": cmd()}
                        for _ in range(r.randint(1, 3))],
            "fix": [{"step": f"Set `{r.choice(NOUNS)}_{r.choice(NOUNS)}: {r.randint(1, 64)}` in the config and restart "
                             f"from the last checkpoint.", "command": cmd()},
                    {"step": f"Or call `{comp}.{fn}` only after `{r.choice(FNS)}` has finished on every rank.",
                     "command": f"engine.{fn.strip('_')}(sync=True)\nengine.{r.choice(FNS).strip('_')}()",
                     "language": "python"}]
            + [f"Upgrade {system_title} to {r.randint(1, 3)}.{r.randint(0, 30)} or later."] * r.randint(0, 1),
            "prevention": [f"Run a {r.randint(2, 20)}-step smoke test that exercises `{fn}` before a long run.",
                           f"Log the {obj} size on every rank at start-up."][: r.randint(1, 2)],
            "examples": [{"stack": systems[0], "title": f"Call {fn} safely on every rank",
                          "code": f"import torch\n\nfor step, batch in enumerate(loader):\n    loss = model(batch)\n"
                                  f"    engine.backward(loss)\n    if step % {r.randint(10, 500)} == 0:\n"
                                  f"        engine.{fn.strip('_')}(sync=True)\n    engine.step()\n",
                          "explanation": f"Synchronising first means no rank holds a stale {obj}."}][: r.randint(0, 1)],
            "faq": [{"question": f"Does this also happen with {r.choice(list(vocab['systems']))}?",
                     "answer": f"Only when `{comp}` is used with {r.choice(OBJECTS)} sharing; the message is the same."}
                    for _ in range(r.randint(1, 3))],
            "related": [],
            # an issue address is an issue (E047), whatever kind the draw gave
            "references": (refs := [{"kind": {"pull-request": "issue"}.get(kind, kind),
                                     "title": f"{system_title} #{r.randint(100, 9999)}: {comp} {action} {obj}",
                                     "url": f"https://github.com/example/{systems[0]}/issues/{r.randint(100, 99999)}"}
                                    for kind in [r.choice(["issue", "docs", "source", "pull-request"])
                                                 for _ in range(r.randint(1, 3))]]),
            "affected": [{"system": systems[0], "introduced": f"{r.randint(0, 2)}.{r.randint(0, 20)}.0",
                          **({"fixed": f"{r.randint(3, 4)}.{r.randint(0, 9)}.0"} if r.random() < 0.5 else {}),
                          "ref": refs[0]["url"]}]   # each range names the reference that states it (E044)
            [: r.randint(0, 1)],
            "reviewed": (dt.date(2025, 1, 1) + dt.timedelta(days=r.randint(0, 690))).isoformat(),
            "authors": ["rootcause maintainers"],
        }
        if self.n > 1:
            others = r.sample(range(self.n), min(self.n, 4))
            rels = []
            for o in others:
                if o != i and len(rels) < r.randint(0, 3):
                    rels.append({"id": self.ids[o], "relation": r.choice(["see-also", "see-also", "causes",
                                                                           "often-confused-with"])})
            entry["related"] = rels
        return entry

    def titles(self) -> dict[str, str]:
        return {self.ids[i]: self.entry(i)["title"] for i in range(self.n)}


def _drop_empty(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if v not in ([], None)}


def _str_representer(dumper, value):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
    pass


_Dumper.add_representer(str, _str_representer)


def entry_yaml(entry: dict) -> str:
    return yaml.dump(_drop_empty(entry), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


# -- Markdown (same content) --------------------------------------------------------------------

def _fence(text: str, lang: str = "text") -> str:
    return f"```{lang}\n{text.rstrip()}\n```\n"


def entry_markdown(entry: dict, vocab: dict, titles: dict[str, str], link) -> str:
    """The body of an entry page in Markdown: the same sections rootcause renders."""
    out = [f"!!! tip \"Quick answer\"\n    {entry['summary']}\n" if link.__name__ == "mkdocs_link"
           else f"> **Quick answer.** {entry['summary']}\n"]
    out.append(f"**{vocab['severities'][entry['severity']]['title']}** · "
               f"{vocab['categories'][entry['category']]['title']} · "
               + " · ".join(vocab["systems"][s]["title"] for s in entry["systems"])
               + f" · Phase: {vocab['phases'][entry['phase']]['title']}\n")
    out.append("## Error signatures\n")
    for sig in entry["signatures"]:
        shown = sig.get("pattern") or "\n".join(s["pattern"] for s in sig["lines"])
        out.append(_fence(shown))
        out.append("Example from a real log:\n")
        for ex in sig["examples"]:
            out.append(_fence(ex["log"]))
        out.append(f"Source: {sig['source']}\n")
    out.append("## Symptoms\n\n| What you observe | Why it happens |\n| --- | --- |")
    out += [f"| {s['observed']} | {s['why']} |" for s in entry["symptoms"]]
    out.append("\n## Root cause\n\n" + entry["root_cause"] + "\n")
    out.append("## Common misdiagnosis\n")
    out += [f"- **{m['assumption']}** {m['reality']}" for m in entry["misdiagnosis"]]
    out.append("\n## How to confirm\n")
    for c in entry["confirm"]:
        out.append(f"- {c['step']}\n\n" + textwrap.indent(_fence(c["command"], "bash"), "    "))
    out.append("## Fix\n")
    for n, f in enumerate(entry["fix"], 1):
        if isinstance(f, str):
            out.append(f"{n}. {f}\n")
        else:
            out.append(f"{n}. {f['step']}\n\n" + textwrap.indent(_fence(f["command"], f.get("language", "bash")), "    "))
    out.append("## Prevention\n")
    out += [f"- {p}" for p in entry["prevention"]]
    if entry["examples"]:
        out.append("\n## Code examples\n")
        for ex in entry["examples"]:
            out.append(f"### {ex['title']}\n\n" + _fence(ex["code"], "python") + "\n" + ex["explanation"] + "\n")
    if entry["affected"]:
        out.append("\n## Affected versions\n\n| System | Introduced | Fixed |\n| --- | --- | --- |")
        out += [f"| {vocab['systems'][a['system']]['title']} | {a.get('introduced', '—')} | {a.get('fixed', '—')} |"
                for a in entry["affected"]]
    out.append("\n## FAQ\n")
    for q in entry["faq"]:
        out.append(f"### {q['question']}\n\n{q['answer']}\n")
    if entry["related"]:
        out.append("## Related errors\n")
        out += [f"- {r['relation']}: [{titles[r['id']]}]({link(r['id'])})" for r in entry["related"]]
    out.append("\n## References\n")
    out += [f"- {r['kind']}: [{r['title']}]({r['url']})" for r in entry["references"]]
    out.append(f"\nReviewed {entry['reviewed']} by {', '.join(entry['authors'])}.\n")
    return "\n".join(out) + "\n"


HUGO_CONFIG = """baseURL = "https://example.org/rootcause/"
title = "rootcause"
languageCode = "en"
disableKinds = []
enableGitInfo = false
[taxonomies]
  category = "categories"
  system = "systems"
  tag = "tags"
  phase = "phases"
  severity = "severities"
[outputs]
  home = ["HTML", "RSS", "JSON"]
[markup.goldmark.renderer]
  unsafe = false
[markup.highlight]
  codeFences = false
"""

HUGO_LAYOUTS = {
    "_default/baseof.html": """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{ .Title }} · {{ .Site.Title }}</title>
<meta name="description" content="{{ with .Params.description }}{{ . }}{{ end }}">
<link rel="canonical" href="{{ .Permalink }}"><link rel="stylesheet" href="{{ "site.css" | relURL }}">
</head><body>
<header><a href="{{ "" | relURL }}">{{ .Site.Title }}</a>
<form action="{{ "search/" | relURL }}"><input type="search" name="q" placeholder="Search or paste an error"></form></header>
<main>{{ block "main" . }}{{ end }}</main>
<footer>{{ .Site.Title }}</footer>
</body></html>
""",
    "_default/single.html": """{{ define "main" }}
<nav><a href="{{ "" | relURL }}">Home</a>{{ range .GetTerms "categories" }} › <a href="{{ .RelPermalink }}">{{ .LinkTitle }}</a>{{ end }}</nav>
<h1>{{ .Title }}</h1>
<p>{{ range .GetTerms "systems" }}<a href="{{ .RelPermalink }}">{{ .LinkTitle }}</a> {{ end }}</p>
{{ .Content }}
<p>Tags: {{ range .GetTerms "tags" }}<a href="{{ .RelPermalink }}">#{{ .LinkTitle }}</a> {{ end }}</p>
{{ end }}
""",
    "_default/list.html": """{{ define "main" }}
<h1>{{ .Title }}</h1>
<ul>{{ range .Pages.ByTitle }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a> <span>{{ .Params.severity }}</span><p>{{ .Params.description | truncate 220 }}</p></li>{{ end }}</ul>
{{ end }}
""",
    "_default/terms.html": """{{ define "main" }}
<h1>{{ .Title }}</h1>
<ul>{{ range .Data.Terms.ByCount }}<li><a href="{{ .Page.RelPermalink }}">{{ .Page.Title }}</a> ({{ .Count }})</li>{{ end }}</ul>
{{ end }}
""",
    "index.html": """{{ define "main" }}
<h1>{{ .Site.Title }}</h1>
<p>{{ len (where .Site.RegularPages "Section" "entries") }} entries.</p>
<h2>Recently reviewed</h2>
<ul>{{ range first 8 (where .Site.RegularPages "Section" "entries").ByDate.Reverse }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>{{ end }}</ul>
<h2>Systems</h2>
<ul>{{ range .Site.Taxonomies.systems.ByCount }}<li><a href="{{ .Page.RelPermalink }}">{{ .Page.Title }}</a> ({{ .Count }})</li>{{ end }}</ul>
{{ end }}
""",
    "index.json": """{{- $docs := slice -}}
{{- range where .Site.RegularPages "Section" "entries" -}}
{{- $docs = $docs | append (dict "id" .File.BaseFileName "title" .Title "summary" .Params.description "severity" .Params.severity "category" (index .Params.categories 0) "signatures" .Params.signatures) -}}
{{- end -}}
{{- $docs | jsonify -}}
""",
}


def write_rootcause(synth: Synth, dest: Path, entries: list[dict]) -> Path:
    project = dest / "rootcause"
    (project / "entries").mkdir(parents=True, exist_ok=True)
    config = (REPO / "site.yml").read_text(encoding="utf-8")
    config = "\n".join(line for line in config.splitlines()
                       if not line.startswith(("healthy_logs:", "study:"))) + "\n"
    (project / "site.yml").write_text(config, encoding="utf-8")
    for entry in entries:
        (project / "entries" / f"{entry['id']}.yaml").write_text(entry_yaml(entry), encoding="utf-8")
    return project


def write_hugo(synth: Synth, dest: Path, entries: list[dict], titles: dict[str, str]) -> Path:
    site = dest / "hugo"
    (site / "content" / "entries").mkdir(parents=True, exist_ok=True)
    (site / "hugo.toml").write_text(HUGO_CONFIG, encoding="utf-8")
    for name, text in HUGO_LAYOUTS.items():
        path = site / "layouts" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (site / "static").mkdir(exist_ok=True)
    (site / "static" / "site.css").write_text("body{font-family:sans-serif;max-width:60rem;margin:auto}\n")
    (site / "content" / "entries" / "_index.md").write_text("---\ntitle: All entries\n---\n", encoding="utf-8")
    (site / "content" / "search.md").write_text("---\ntitle: Search\n---\nSearch.\n", encoding="utf-8")

    def hugo_link(target: str) -> str:
        return f"../{target}/"

    for entry in entries:
        front = {"title": entry["title"], "description": entry["summary"], "date": entry["reviewed"],
                 "categories": [entry["category"]], "systems": entry["systems"], "phases": [entry["phase"]],
                 "severities": [entry["severity"]], "severity": entry["severity"], "tags": entry["tags"],
                 "signatures": [s.get("pattern") or " / ".join(x["pattern"] for x in s["lines"])
                                for s in entry["signatures"]]}
        body = entry_markdown(entry, synth.vocab, titles, hugo_link)
        text = "---\n" + yaml.dump(front, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000) + "---\n" + body
        (site / "content" / "entries" / f"{entry['id']}.md").write_text(text, encoding="utf-8")
    return site


def write_mkdocs(synth: Synth, dest: Path, entries: list[dict], titles: dict[str, str]) -> Path:
    site = dest / "mkdocs"
    (site / "docs" / "entries").mkdir(parents=True, exist_ok=True)
    (site / "mkdocs.yml").write_text(
        "site_name: rootcause\nsite_url: https://example.org/rootcause/\ntheme:\n  name: material\n"
        "plugins:\n  - search\nmarkdown_extensions:\n  - tables\n  - admonition\n  - pymdownx.superfences\n",
        encoding="utf-8")
    (site / "docs" / "index.md").write_text("# rootcause\n\nAn encyclopedia of ML training failures.\n")

    def mkdocs_link(target: str) -> str:
        return f"{target}.md"

    for entry in entries:
        front = {"title": entry["title"], "description": entry["summary"], "tags": entry["tags"]}
        body = entry_markdown(entry, synth.vocab, titles, mkdocs_link)
        text = ("---\n" + yaml.dump(front, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000) + "---\n"
                + f"# {entry['title']}\n\n" + body)
        (site / "docs" / "entries" / f"{entry['id']}.md").write_text(text, encoding="utf-8")
    return site


def is_current(project: Path, n: int) -> bool:
    """A cached synthetic rootcause project made by this very version of synth.py, with n entries."""
    stamp = project / ".synth-stamp"
    return (stamp.exists() and stamp.read_text() == _stamp(n)
            and len(list((project / "entries").glob("*.yaml"))) == n)


def _stamp(n: int) -> str:
    import hashlib

    return f"{n}:" + hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def generate(n: int, dest: Path, seed: int = 7, only: set[str] | None = None) -> dict[str, Path]:
    """Write the forms asked for under dest/{rootcause,hugo,mkdocs}; returns their folders."""
    dest = Path(dest)
    synth = Synth(n, seed)
    entries = [synth.entry(i) for i in range(n)]
    titles = {e["id"]: e["title"] for e in entries}
    only = only or {"rootcause", "hugo", "mkdocs"}
    out = {}
    for name in sorted(only):
        folder = dest / name
        if folder.exists():
            shutil.rmtree(folder)
    if "rootcause" in only:
        out["rootcause"] = write_rootcause(synth, dest, entries)
        (out["rootcause"] / ".synth-stamp").write_text(_stamp(n))
    if "hugo" in only:
        out["hugo"] = write_hugo(synth, dest, entries, titles)
    if "mkdocs" in only:
        out["mkdocs"] = write_mkdocs(synth, dest, entries, titles)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, help="number of entries")
    parser.add_argument("dest", help="folder to write into (rootcause/, hugo/, mkdocs/ below it)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", action="append", choices=["rootcause", "hugo", "mkdocs"])
    args = parser.parse_args(argv)
    paths = generate(args.n, Path(args.dest), args.seed, set(args.only) if args.only else None)
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
