"""The verdict on a job's Flight Recorder dumps: which rank stopped, in which collective.

Per process group (its name and description, as the dumps record them), the ranks are aligned by
sequence number: the collective the most advanced ranks wait in is the group's *top*; a rank whose
last collective is below it never entered it (missing, one behind; lagging, further behind); a rank
with no dump at all is named as such; the first sequence number at which the ranks' calls differ
(operation, sizes, dtypes) is a mismatch, the calls shown side by side; a pending send or recv
whose partner posted nothing is a p2p without partner. The divergences are then ranked: a group
whose stragglers are themselves waiting in another group's collective is a consequence of that
group's hang; the root-cause group comes first, and the verdict leads with one sentence on it.

gloo records no point-to-point operation and leaves every state "scheduled" (NCCL records both);
the verdict says so where it matters. The process groups' members come from `pg_config` where the
backend recorded them (NCCL), else from the ranks whose dumps show the group.

Plain data in, plain data out (`verdict(dumps)` → a dict ready for JSON); the encyclopedia entries
for each kind of divergence are named by id in `ENTRIES_BY_KIND`, looked up by the caller.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .flight_recorder import Dump, DumpError, Entry

#: the entries that explain each kind of divergence, best first (looked up by the caller)
ENTRIES_BY_KIND = {
    "mismatch": ("distributed-mismatched-collectives", "gloo-collective-size-mismatch"),
    "missing": ("distributed-hang-mid-training", "nccl-watchdog-collective-timeout"),
    "lagging": ("distributed-hang-mid-training", "nccl-watchdog-collective-timeout"),
    "no_dump": ("torchrun-worker-killed-sigkill", "gloo-connection-closed-by-peer"),
    "p2p_unmatched": ("distributed-hang-mid-training", "distributed-mismatched-collectives"),
}
_KIND_ORDER = {"mismatch": 0, "p2p_unmatched": 1, "missing": 2, "no_dump": 3, "lagging": 4}
#: ops whose sizes legitimately differ between ranks (root and the others, or per peer)
_SIZES_DIFFER = {"all_to_all", "alltoall", "alltoall_base", "all_to_allv", "gather", "scatter", "reduce_scatter_v",
                 "allgather_v", "all_gather_v", "coalesced"}
_INTERNAL = ("/torch/distributed/", "/torch/nn/parallel/", "<frozen ")


@dataclass
class Group:
    name: str
    desc: str
    members: set[int] = field(default_factory=set)
    #: rank -> its collective entries in this group by sequence number
    calls: dict[int, dict[int, Entry]] = field(default_factory=dict)
    p2p: dict[int, list[Entry]] = field(default_factory=dict)
    no_dump: set[int] = field(default_factory=set)

    @property
    def label(self) -> str:
        shown = self.desc if self.desc and self.desc != "undefined" else f"group {self.name}"
        return f"{shown} (pg {self.name})"

    def last(self, rank: int) -> int:
        """The rank's last collective's sequence number in this group (0: none recorded)."""
        return max(self.calls.get(rank) or (0,))

    @property
    def dumped(self) -> list[int]:
        """The members that left a dump, whether or not it shows a collective of this group."""
        return sorted(self.members - self.no_dump)


def _number(name: str) -> int:
    return int(name) if name.isdigit() else 1 << 62


def join_ranks(ranks) -> str:
    ranks = sorted(ranks)
    words = [str(r) for r in ranks]
    if len(words) == 1:
        return f"rank {words[0]}"
    return "ranks " + (", ".join(words[:-1]) + " and " + words[-1])


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def check_consistent(dumps: list[Dump]) -> None:
    """Dumps from one job: one per rank, one version. Raises DumpError naming the files."""
    seen: dict[int, Dump] = {}
    for dump in dumps:
        if dump.rank in seen:
            raise DumpError(dump.path, f"a second dump for rank {dump.rank} (the first is {seen[dump.rank].path}); "
                                       "give one folder or one format per job")
        seen[dump.rank] = dump
    versions = {d.version for d in dumps}
    if len(versions) > 1:
        first = dumps[0]
        other = next(d for d in dumps if d.version != first.version)
        raise DumpError(other.path, f"dump format version {other.version}, but {first.path} has {first.version}: "
                                    "dumps of different PyTorch builds, probably not one job")


def build_groups(dumps: list[Dump]) -> tuple[dict[tuple[str, str], Group], int]:
    groups: dict[tuple[str, str], Group] = {}
    by_name: dict[str, tuple[str, tuple[int, ...] | None]] = {}
    for dump in dumps:
        by_name.update({k: v for k, v in dump.pg_config.items() if v[1]})
    for dump in dumps:
        for entry in dump.entries:
            group = groups.setdefault((entry.pg_name, entry.pg_desc), Group(entry.pg_name, entry.pg_desc))
            group.members.add(dump.rank)
            if entry.is_p2p:
                group.p2p.setdefault(dump.rank, []).append(entry)
            else:
                group.calls.setdefault(dump.rank, {})[entry.collective_seq_id] = entry
    ranks = {d.rank for d in dumps}
    configured = {r for _, members in by_name.values() for r in (members or ())}
    world = max(ranks | configured) + 1 if ranks else 0
    for group in groups.values():
        desc_ranks = by_name.get(group.name, ("", None))[1]
        if desc_ranks:
            group.members |= set(desc_ranks)
        elif group.desc == "default_pg" or group.name == "0":
            group.members |= set(range(world))
        group.no_dump = group.members - ranks
    return groups, world


def _signature(entry: Entry) -> tuple:
    sizes = () if entry.op in _SIZES_DIFFER else (repr(entry.input_sizes), repr(entry.output_sizes))
    return (entry.op, sizes, tuple(sorted(set(entry.input_dtypes) | set(entry.output_dtypes))))


def _call(entry: Entry) -> dict:
    return {"op": entry.op, "seq": entry.seq, "input_sizes": entry.input_sizes, "output_sizes": entry.output_sizes,
            "input_dtypes": entry.input_dtypes, "output_dtypes": entry.output_dtypes, "state": entry.state}


def _mismatch(group: Group) -> dict | None:
    ranks = sorted(group.calls)
    if len(ranks) < 2:
        return None
    start = max(min(group.calls[r]) for r in ranks)
    top = max(group.last(r) for r in ranks)
    for seq in range(start, top + 1):
        present = {r: group.calls[r][seq] for r in ranks if seq in group.calls[r]}
        if len(present) < 2:
            continue
        sides: dict[tuple, list[int]] = defaultdict(list)
        for rank, entry in present.items():
            sides[_signature(entry)].append(rank)
        if len(sides) < 2:
            continue
        ordered = sorted(sides.items(), key=lambda kv: (-len(kv[1]), kv[1]))
        majority = ordered[0][1]
        # the ranks outside the largest side (on a tie, the side holding the lowest rank counts as the larger)
        culprits = sorted(r for _, rs in ordered[1:] for r in rs)
        first_other = present[culprits[0]]
        base = present[majority[0]]
        if first_other.op != base.op:
            detail = "op"
        elif _signature(first_other)[1] != _signature(base)[1]:
            detail = "size"
        else:
            detail = "dtype"
        return {"seq": seq, "detail": detail, "majority": sorted(majority), "culprits": culprits,
                "calls": [{"ranks": sorted(rs), **_call(present[rs[0]])} for _, rs in ordered],
                "tie": len(ordered[1][1]) == len(majority), "present": present}
    return None


def _p2p_unmatched(group: Group) -> dict | None:
    """A pending send or recv whose partner posted fewer operations to it (NCCL; gloo records none)."""
    if not group.p2p:
        return None
    local = sorted(group.members)
    posted: Counter = Counter()
    for entries in group.p2p.values():
        for entry in entries:
            ends = _p2p_ends(entry, local)
            if ends is not None:
                posted[(entry.op, *ends)] += 1
    for rank, entries in sorted(group.p2p.items()):
        for entry in entries:
            ends = None if entry.state == "completed" else _p2p_ends(entry, local)
            if ends is None:
                continue
            src, dst = ends
            partner_op = "recv" if entry.op == "send" else "send"
            partner = dst if entry.op == "send" else src
            if posted[(partner_op, src, dst)] < posted[(entry.op, src, dst)]:
                return {"rank": rank, "partner": partner, "entry": entry, "partner_op": partner_op,
                        "posted": posted[(entry.op, src, dst)], "partner_posted": posted[(partner_op, src, dst)]}
    return None


def _p2p_ends(entry: Entry, local: list[int]) -> tuple[int, int] | None:
    """(sending rank, receiving rank) of a p2p record (`peer` "a->b" or "a<-b"), as global ranks
    where they are the group's local ones; None when the record names no pair."""
    parts = entry.peer.replace("<-", "->").split("->") if entry.peer else []
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    a, b = (int(p) for p in parts)
    src, dst = (a, b) if entry.op == "send" else (b, a)
    if max(src, dst) < len(local):
        src, dst = local[src], local[dst]
    return src, dst


def _frames(entry: Entry | None) -> list[dict]:
    if entry is None:
        return []
    own = [f for f in entry.frames if not any(mark in f.filename for mark in _INTERNAL)]
    return [{"name": f.name, "filename": f.filename, "line": f.line} for f in (own or list(entry.frames))]


def _latest(dump: Dump) -> Entry | None:
    return max(dump.entries, key=lambda e: e.record_id) if dump.entries else None


def verdict(dumps: list[Dump]) -> dict:
    """The verdict on one job's dumps (see the module's doc): plain data."""
    check_consistent(dumps)
    dumps = sorted(dumps, key=lambda d: d.rank)
    groups, world = build_groups(dumps)
    by_rank = {d.rank: d for d in dumps}
    backends = sorted({e.backend for d in dumps for e in d.entries if e.backend})
    states_known = any(e.state == "completed" for d in dumps for e in d.entries)
    divergences: list[dict] = []
    tables = []
    for key in sorted(groups, key=lambda k: (-len(groups[k].members), _number(k[0]), k)):
        group = groups[key]
        dumped = group.dumped
        top = max((group.last(r) for r in dumped), default=0)
        top_entry = next((group.calls[r][top] for r in dumped if top in group.calls[r]), None)
        rows = []
        for rank in sorted(group.members):
            last = group.last(rank) if rank not in group.no_dump else None
            entry = group.calls[rank][last] if last else None
            rows.append({"rank": rank, "last_seq": last, "op": entry.op if entry else None,
                         "state": entry.state if entry else None, "dump": rank not in group.no_dump})
        tables.append({"group": group.label, "name": group.name, "desc": group.desc,
                       "members": sorted(group.members), "top_seq": top, "top_op": top_entry.op if top_entry else None,
                       "ranks": rows})
        mismatch = _mismatch(group)
        if mismatch:
            present = mismatch.pop("present")
            culprit_entry = present[mismatch["culprits"][0]]
            divergences.append({"kind": "mismatch", "group": group.label, "pg": group.name, "desc": group.desc,
                                "op": culprit_entry.op, "seq": mismatch["seq"], "detail": mismatch["detail"],
                                "culprits": mismatch["culprits"], "waiting": mismatch["majority"],
                                "tie": mismatch["tie"], "calls": mismatch["calls"],
                                "stack_rank": mismatch["culprits"][0], "stack": _frames(culprit_entry)})
        p2p = _p2p_unmatched(group)
        if p2p:
            entry = p2p["entry"]
            divergences.append({"kind": "p2p_unmatched", "group": group.label, "pg": group.name, "desc": group.desc,
                                "op": entry.op, "seq": entry.p2p_seq_id, "culprits": [p2p["partner"]],
                                "waiting": [p2p["rank"]], "partner_op": p2p["partner_op"],
                                "stack_rank": p2p["rank"], "stack": _frames(entry)})
        behind = {r: top - group.last(r) for r in dumped if group.last(r) < top}
        at_top = [r for r in dumped if group.last(r) == top]
        if behind and not (mismatch and mismatch["seq"] <= top and set(behind) <= set(mismatch["culprits"])):
            kind = "missing" if min(behind.values()) == 1 else "lagging"
            culprit = min(behind, key=lambda r: (-behind[r], r))
            first_missing = min(group.last(r) for r in behind) + 1
            waiting_in = next((group.calls[r][first_missing] for r in at_top if first_missing in group.calls[r]), top_entry)
            assert waiting_in is not None   # a rank is behind, so the ranks at the top have a call there
            divergences.append({"kind": kind, "group": group.label, "pg": group.name, "desc": group.desc,
                                "op": waiting_in.op, "seq": waiting_in.seq, "top_seq": top,
                                "culprits": sorted(behind), "behind": {str(r): g for r, g in sorted(behind.items())},
                                "waiting": at_top, "stack_rank": culprit,
                                "stack": _frames(group.calls[culprit][group.last(culprit)]
                                                 if group.calls.get(culprit) else None)})
        elif group.no_dump and top_entry is not None:
            divergences.append({"kind": "no_dump", "group": group.label, "pg": group.name, "desc": group.desc,
                                "op": top_entry.op, "seq": top, "culprits": sorted(group.no_dump),
                                "waiting": at_top, "stack_rank": None, "stack": []})
    # where each rank waits: its latest entry, when that collective is the one a diverged group waits in
    blocked: dict[int, str] = {}
    for rank, dump in by_rank.items():
        latest = _latest(dump)
        if latest is None:
            continue
        for d in divergences:
            if d["pg"] == latest.pg_name and d["desc"] == latest.pg_desc and rank in d["waiting"]:
                group = groups[(latest.pg_name, latest.pg_desc)]
                if group.last(rank) >= d["seq"]:
                    blocked[rank] = d["group"]
    for d in divergences:
        elsewhere = {r: blocked[r] for r in d["culprits"] if r in blocked and blocked[r] != d["group"]}
        d["root"] = not elsewhere
        d["explained_by"] = sorted(set(elsewhere.values()))
        d["culprits_waiting_elsewhere"] = {str(r): g for r, g in sorted(elsewhere.items())}
    divergences.sort(key=lambda d: (not d["root"], _KIND_ORDER[d["kind"]], len(d["culprits"]), d["group"]))
    for d in divergences:
        d["sentence"] = sentence(d)
        d["entries"] = list(ENTRIES_BY_KIND[d["kind"]])
    notes = []
    if "gloo" in backends:
        notes.append("gloo records no send or recv in the Flight Recorder and leaves every state 'scheduled': "
                     "a rank missing from a collective may be waiting in a point-to-point operation (its log says).")
    missing_dumps = sorted(set(range(world)) - set(by_rank))
    headline = divergences[0]["sentence"] if divergences else _healthy_sentence(tables, len(dumps))
    return {"headline": headline, "healthy": not divergences, "dumps": len(dumps),
            "ranks": sorted(by_rank), "ranks_without_dump": missing_dumps, "world_size": world,
            "version": dumps[0].version if dumps else "", "backends": backends, "states_recorded": states_known,
            "formats": sorted({d.format for d in dumps}),
            "divergences": divergences, "groups": tables, "notes": notes,
            "files": {str(d.rank): d.path for d in dumps}}


def _healthy_sentence(tables: list[dict], count: int) -> str:
    if not tables:
        return f"The {count} dumps hold no collective."
    return (f"No divergence in {count} dumps: in each of the {len(tables)} process groups every rank reached "
            "the same collective, with the same operation, sizes and dtypes; the dumps do not show a hang.")


def sentence(d: dict) -> str:
    """The one sentence a divergence leads with."""
    op = f"`{d['op']}` #{d['seq']} of {d['group']}"
    others = len(d["waiting"])
    if d["kind"] == "missing":
        waiting = (f"the other {others} ranks wait in it" if others > 2 else
                   f"{join_ranks(d['waiting'])} {'waits' if others == 1 else 'wait'} in it")
        return f"{_cap(join_ranks(d['culprits']))} never entered {op}; {waiting}."
    if d["kind"] == "lagging":
        gaps = sorted(set(d["behind"].values()))
        gap = f"{gaps[0]}" if len(gaps) == 1 else f"{gaps[0]} to {gaps[-1]}"
        verb = "is" if len(d["culprits"]) == 1 else "are"
        queued = f" (queued up to #{d['top_seq']})" if d["top_seq"] > d["seq"] else ""
        return (f"{_cap(join_ranks(d['culprits']))} {verb} {gap} collectives behind in {d['group']}: never entered "
                f"`{d['op']}` #{d['seq']}, where {join_ranks(d['waiting'])} "
                f"{'waits' if others == 1 else 'wait'}{queued}.")
    if d["kind"] == "no_dump":
        verb = "wait" if others != 1 else "waits"
        return (f"{_cap(join_ranks(d['culprits']))} left no dump (died, or never dumped); "
                f"{join_ranks(d['waiting'])} {verb} in {op}.")
    if d["kind"] == "p2p_unmatched":
        return (f"{_cap(join_ranks(d['waiting']))} waits in `{d['op']}` #{d['seq']} of {d['group']}; "
                f"{join_ranks(d['culprits'])} never posted the matching `{d['partner_op']}`.")
    calls = d["calls"]
    mine = next(c for c in calls if d["culprits"][0] in c["ranks"])
    theirs = next(c for c in calls if c is not mine)
    who, them = join_ranks(mine["ranks"]), join_ranks(theirs["ranks"])
    where = f"#{d['seq']} of {d['group']}"
    if d["detail"] == "op":
        return f"{_cap(who)} called `{mine['op']}` where {them} called `{theirs['op']}`, at {where}."
    if d["detail"] == "size":
        return (f"{_cap(who)} called `{mine['op']}` {where} with sizes {mine['input_sizes']} where {them} "
                f"used {theirs['input_sizes']}.")
    return (f"{_cap(who)} called `{mine['op']}` {where} with dtype {', '.join(mine['input_dtypes'])} where {them} "
            f"used {', '.join(theirs['input_dtypes'])}.")
