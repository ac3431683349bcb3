"""The fast config reader builds exactly what protobuf's text_format builds, or declines.

Property everywhere: ``config_reader.read`` returns None or a message equal to text_format's
(``==`` and the deterministic wire bytes), and None whenever text_format raises. A reader that
always declined would pass that, so the fast path is also required to take what it is built
for: every generated config written in the forms it handles, and every valid fixture config
that uses none of the constructs it declines by design, which are

- integers other than plain decimal (hex, octal, "+1", "1_000") and floats other than plain
  decimal with an optional exponent ("inf", "nan", "1.5f"), and floats a float32 field
  turns into infinity;
- enum values written as numbers;
- a singular field written twice (text_format lets a proto3 field written with its default
  value be written again; the reader never does);
- extension and Any ``[...]`` names.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from triton_doctor.triton import config_reader, model_config

from tests.pbtxt_generator import config, mutate, reachable_fields

# text_format unescapes "\\q" and the like with a DeprecationWarning; the wild texts hold many.
pytestmark = pytest.mark.filterwarnings("ignore:.*escape sequence:DeprecationWarning")

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT.parent / "shared" / "conformance"
MODEL_CONFIG = model_config.schema().ModelConfig


def _outcome(text: str) -> str:
    """Assert the property; "taken" (read fast), "rejected" (text_format raises) or
    "declined" (text_format reads it, the reader leaves it to text_format)."""
    try:
        expected = text_format.Parse(text, MODEL_CONFIG())
    except Exception:  # text_format raises more than ParseError (e.g. on lone surrogates)
        expected = None
    fast = config_reader.read(text, MODEL_CONFIG)
    if expected is None:
        assert fast is None, f"text_format rejects what the reader took:\n{text}"
        return "rejected"
    if fast is None:
        return "declined"
    assert fast == expected, text
    assert fast.SerializeToString(deterministic=True) == expected.SerializeToString(
        deterministic=True
    ), text
    return "taken"


def _pbtxt_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.pbtxt"))


_DECLINED_NUMBER = re.compile(
    r"(?<![\w.])(?:[+-]?0[xXoObB0-9]\w*|[+]\d\S*|\d[\d.]*_\S*|-?(?:inf|nan)\w*|\d[\d.eE+-]*[fF])"
    r"(?![\w\"'])",
    re.IGNORECASE,
)
_ENUM_FIELD_NUMBER = re.compile(r"\b(?:data_type|kind|format|priority|timeout_action)\s*:\s*-?\d")


def _declined_by_design(text: str) -> bool:
    """Whether ``text`` uses a construct the reader declines by design (the module docstring;
    all but a singular field written twice, which no fixture does: one that did would fail the
    test below and be named by it)."""
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    return bool(
        _DECLINED_NUMBER.search(code)
        or _ENUM_FIELD_NUMBER.search(code)
        or re.search(r"^\s*\[", code, re.MULTILINE)
    )


@pytest.mark.parametrize(
    "root", [ROOT / "fixtures", CONFORMANCE], ids=["fixtures", "shared-conformance"]
)
def test_repository_configs_agree_and_are_read_fast(root: Path) -> None:
    if not root.is_dir():
        pytest.skip(f"{root} is absent")
    files = _pbtxt_files(root)
    assert files
    declined = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if _outcome(text) == "declined" and not _declined_by_design(text):
            declined.append(path)
    assert declined == [], "valid configs the fast reader did not take"


def test_generated_configs_cover_the_schema_and_are_read_fast() -> None:
    rng = random.Random(20261202)
    written: set[str] = set()
    for _ in range(10_000):
        text, fields = config(rng)
        written |= fields
        assert _outcome(text) == "taken", f"a plainly written config was not read fast:\n{text}"
    assert written == reachable_fields()


def test_wild_and_broken_configs_agree() -> None:
    rng = random.Random(7)
    outcomes = {"taken": 0, "rejected": 0, "declined": 0}
    for _ in range(5_000):
        text, _ = config(rng, wild=rng.choice([0.0, 0.002, 0.01, 0.03]))
        if rng.random() < 0.6:
            text = mutate(rng, text)
        outcomes[_outcome(text)] += 1
    # The mix must exercise all three outcomes, or the test says little.
    assert min(outcomes.values()) > 20, outcomes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**64),
    wild=st.sampled_from([0.0, 0.002, 0.01, 0.1]),
    breaks=st.integers(0, 2),
)
def test_property_over_the_generator(seed: int, wild: float, breaks: int) -> None:
    rng = random.Random(seed)
    text, _ = config(rng, wild)
    for _ in range(breaks):
        text = mutate(rng, text)
    _outcome(text)


@pytest.mark.parametrize(
    "text",
    [
        'name: "a" name: "b"',  # duplicate singular field: text_format refuses
        "max_batch_size: 0 max_batch_size: 8",  # text_format accepts (proto3 default first)
        "dynamic_batching {} sequence_batching {}",  # two members of one oneof
        "max_batch_size: 0x10",
        "max_batch_size: 010",  # C octal to text_format
        "max_batch_size: 2147483648",
        "input { data_type: 11 }",  # enum by number
        "sequence_batching { direct { minimum_slot_utilization: 1e39 } }",  # float32 inf
        "sequence_batching { direct { minimum_slot_utilization: inf } }",
        "[inference.x]: 1",
        'name: "unterminated',
        'name: "\\xff"',  # not UTF-8
        'name: "\\u00e9"',  # text_format unescapes in two passes
        'name: "\\q"',  # text_format keeps it, with a DeprecationWarning
        'name: "\udc80"',  # a lone surrogate (an undecodable byte read with surrogateescape)
        "name: 'a' }",
        "input { name: 'a'",
        "no_such_field: 1",
        "max_batch_size 8",  # scalars need ":"
        "dims: [1, 2]",  # not a ModelConfig field
        "input { dims: [1, ] }",
    ],
)
def test_declines(text: str) -> None:
    assert config_reader.read(text, MODEL_CONFIG) is None
    _outcome(text)


@pytest.mark.parametrize(
    "text",
    [
        "input: [ { name: 'a' dims: [ -1, 3 ] }, < name: \"b\" dims: 2 dims: 4 > ];",
        "parameters { key: 'k' value { string_value: 'x' } } parameters [ { key: 'k' } ]",
        "instance_group { kind: KIND_GPU gpus: [] gpus: [0, 1] count: 2 },",
        "name: 'a' \"b\"\n'c' # comment\n backend: \"\\x41\\n\\101\\0\\47\"",
        "sequence_batching { control_input { control { fp32_false_true: [0.1, -1e-3, 3] } } }",
        "model_warmup { inputs { key: 'x' value: { random_data: t dims: 1 } } };",
        "model_metrics { metric_control { histogram_options { buckets: [1e308, .5] } } }",
        "dynamic_batching { priority_queue_policy { key: 18446744073709551615 value {} } }",
        "model_transaction_policy < decoupled: True >; max_batch_size: -2147483648",
    ],
)
def test_reads_fast(text: str) -> None:
    assert _outcome(text) == "taken"


def test_parse_reports_text_format_errors_when_the_reader_declines() -> None:
    with pytest.raises(model_config.ConfigSyntaxError) as raised:
        model_config.parse('name: "a"\nname: "b"\n')
    assert raised.value.problem.line == 2
    assert 'multiple "name" fields' in raised.value.problem.describe()
