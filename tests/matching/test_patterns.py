"""The signature pattern language: placeholders, portability rules, anchors."""

from __future__ import annotations

import pytest

from rootcause.matching.patterns import PLACEHOLDERS, PatternError, check_portable, compile_pattern, compile_regex
from rootcause.matching.signatures import CompiledSignature, find_matches, parse_text


def search(pattern: str, line: str) -> bool:
    return bool(compile_pattern(pattern).compile_re2().search(line))


def test_literal_text_is_literal():
    assert search("copying a param with shape torch.Size([0]) from checkpoint", "x copying a param with shape torch.Size([0]) from checkpoint")
    assert not search("copying a param with shape torch.Size([0]) from checkpoint", "copying a param with shape torch_Size([0]) from checkpoint")


@pytest.mark.parametrize("name", sorted(PLACEHOLDERS))
def test_each_placeholder_matches_its_documented_example(name: str):
    example = PLACEHOLDERS[name][2]
    assert search(f"value is here: {{{name}}} !end", f"value is here: {example} !end")


def test_placeholders_do_not_cross_their_type():
    assert search("world size of {int} but", "world size of 16 but")
    assert not search("world size of {int} but", "world size of sixteen but")
    assert search("param with shape {shape} from", "param with shape torch.Size([5000, 256]) from")


def test_braces_escape_by_doubling():
    assert search('config {{"stage": {int}}} rejected', 'config {"stage": 3} rejected')


@pytest.mark.parametrize("pattern, code", [
    ("size mismatch for {size}", "E030"),
    ("lonely } brace in pattern text", "E030"),
    ("", "E030"),
    ("short {int}", "E034"),
    ("{any} too {any} many {any} anys here", "E034"),
])
def test_bad_patterns_are_refused_with_a_code(pattern: str, code: str):
    with pytest.raises(PatternError) as info:
        compile_pattern(pattern)
    assert info.value.code == code


@pytest.mark.parametrize("regex", [
    r"(?=CUDA) out of memory happened",
    r"(CUDA)\1 out of memory happened",
    r"(?P<what>CUDA) out of memory happened",
    r"(?i)cuda out of memory happened",
    r"CUDA\s+out of memory happened",
    r"\ACUDA out of memory happened",
    r"(CUDA out+)+ of memory happened",
])
def test_non_portable_regexes_are_refused(regex: str):
    with pytest.raises(PatternError) as info:
        compile_regex(regex)
    assert info.value.code == "E031"


@pytest.mark.parametrize("regex, column", [
    ("emoji range anchor [😀-😂] here", 21),          # JavaScript's RegExp: "Range out of order"
    ("emoji range anchor [a😀] here", 22),            # a RegExp: either half of the pair
    (r"emoji range anchor [\U0001F600-\U0001F602] here", 1),  # written as escapes: no column to show
    (r"emoji range anchor [^\x00-\U0010FFFF] here", 1),
])
def test_a_class_beyond_the_basic_multilingual_plane_is_refused_with_e039(regex: str, column: int):
    for check in (compile_regex, check_portable):
        with pytest.raises(PatternError) as info:
            check(regex)
        assert (info.value.code, info.value.column) == ("E039", column)
        assert "beyond U+FFFF" in str(info.value)


def test_a_class_in_the_basic_multilingual_plane_and_astral_literal_text_are_accepted():
    assert compile_regex("accented range anchor [é-ü]+ here").compile_re2().search("accented range anchor öü here")
    assert search("😀 emoji anchor 😀 {int}", "😀 emoji anchor 😀 42")


@pytest.mark.parametrize("compile_", [compile_pattern, compile_regex])
def test_a_lone_surrogate_is_refused_with_e039_not_a_traceback(compile_):
    """YAML refuses the escape itself (E003); a signatures.json or a caller of the API does not."""
    with pytest.raises(PatternError) as info:
        compile_("surrogate anchor \ud83d then here")
    assert (info.value.code, info.value.column) == ("E039", 18)


def test_a_portable_regex_gets_an_anchor():
    compiled = compile_regex(r"CUDA error: (an illegal memory access|misaligned address) was encountered")
    assert compiled.anchor == " was encountered"  # the longest literal run outside the group
    assert compiled.compile_re2().search("RuntimeError: CUDA error: misaligned address was encountered")


def test_anchor_is_the_longest_literal_piece():
    assert compile_pattern("size mismatch for {name}: copying a param with shape {shape}").anchor == \
        ": copying a param with shape "


def test_multiline_signature_needs_its_lines_in_order_in_one_process():
    sig = CompiledSignature("e", 0, (compile_pattern('ds_to_universal.py", line {int}, in dump_param_fragment'),
                                     compile_pattern("RuntimeError: start ({int}) + length ({int}) exceeds")), within=5)
    good = '[rank1]:   File "x/ds_to_universal.py", line 194, in dump_param_fragment\n[rank1]: RuntimeError: start (0) + length (9) exceeds dimension size (4).'
    assert find_matches(sig, parse_text(good))
    other_rank = good.replace("[rank1]: RuntimeError", "[rank2]: RuntimeError")
    assert not find_matches(sig, parse_text(other_rank))
    reversed_order = "\n".join(reversed(good.splitlines()))
    assert not find_matches(sig, parse_text(reversed_order))
    too_far = good.replace("\n", "\n" + "[rank1]: noise\n" * 6)
    assert not find_matches(sig, parse_text(too_far))


def test_unless_vetoes_a_match_nearby():
    sig = CompiledSignature("e", 0, (compile_pattern("CUDA out of memory. Tried to allocate"),),
                            unless=(compile_pattern("reserved but unallocated memory is large"),), within=3)
    assert find_matches(sig, parse_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB."))
    assert not find_matches(sig, parse_text("CUDA out of memory. Tried to allocate 2 GiB. If reserved but unallocated memory is large try"))


def test_an_unprefixed_line_fits_the_stream_of_a_multiline_match():
    """DeepSpeed's logger and Python warnings print without the launcher's rank prefix."""
    sig = CompiledSignature("e", 0, (compile_pattern("Current loss scale already at minimum"),
                                     compile_pattern("cannot decrease scale anymore. Exiting run")), within=5)
    log = "[rank0]: Current loss scale already at minimum\ncannot decrease scale anymore. Exiting run."
    (match,) = find_matches(sig, parse_text(log))
    assert match.stream == "#0"
