"""model.py's auto_complete_config, followed with ast and replayed as the Python backend does."""

from __future__ import annotations

import ast
from typing import Any

import pytest
from triton_doctor.checks.autocomplete_calls import follow
from triton_doctor.evidence import AutoCompleteFacts, PythonSource
from triton_doctor.triton import model_config
from triton_doctor.triton.autocomplete import complete_backend


def _facts(body: str) -> AutoCompleteFacts:
    source = "def auto_complete_config(cfg):\n" + "".join(
        f"    {line}\n" for line in body.strip().splitlines()
    )
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    return follow(function)


def _complete(config_text: str, body: str) -> tuple[Any, str | None]:
    config = model_config.parse('name: "m" backend: "python"\n' + config_text)
    source = PythonSource(name="model.py", auto_complete=_facts(body))
    result = complete_backend(config, None, source)
    return result.config, result.error


def test_straight_line_calls_are_exact() -> None:
    facts = _facts("""
x = {"name": "IN", "data_type": "TYPE_FP32", "dims": [4]}
cfg.add_input(x)
cfg.set_max_batch_size(8)
return cfg
""")
    assert facts.exact and facts.returns_value
    assert [(c.method, c.argument) for c in facts.calls] == [
        ("add_input", {"name": "IN", "data_type": "TYPE_FP32", "dims": [4]}),
        ("set_max_batch_size", 8),
    ]


def test_loops_over_literal_lists_are_unrolled_and_dict_calls_read() -> None:
    facts = _facts("""
inputs = [dict(name="A", data_type="TYPE_INT32", dims=[1]),
          {"name": "B", "data_type": "TYPE_INT32", "dims": [-1]}]
for spec in inputs:
    cfg.add_input(spec)
return cfg
""")
    assert facts.exact
    assert [c.argument["name"] for c in facts.calls] == ["A", "B"]


def test_branches_make_calls_conditional() -> None:
    facts = _facts("""
config = cfg.as_dict()
if config["max_batch_size"] == 0:
    cfg.set_max_batch_size(4)
return cfg
""")
    assert not facts.exact
    assert [(c.method, c.conditional) for c in facts.calls] == [("set_max_batch_size", True)]


def test_computed_arguments_are_unknown() -> None:
    facts = _facts("""
for spec in load_specs():
    cfg.add_output(spec)
return cfg
""")
    assert not facts.exact
    assert facts.calls[0].known is False


def test_return_inside_a_nested_function_does_not_count() -> None:
    facts = _facts("""
def helper():
    return 1
cfg.set_max_batch_size(0)
""")
    assert not facts.returns_value


def test_fills_what_the_config_leaves_out() -> None:
    config, error = _complete("", """
cfg.set_max_batch_size(4)
cfg.set_dynamic_batching()
cfg.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4]})
cfg.add_output({"name": "OUT", "data_type": "TYPE_FP32", "dims": [4]})
return cfg
""")
    assert error is None
    assert config.max_batch_size == 4 and config.HasField("dynamic_batching")
    assert [(t.name, list(t.dims)) for t in config.input] == [("IN", [4])]


@pytest.mark.parametrize(
    ("config_text", "body", "words"),
    [
        ("max_batch_size: 6", "cfg.set_max_batch_size(4)\nreturn cfg",
         "configuration specified max_batch_size 6, but in auto-complete-config function for "
         "model 'm' specified max_batch_size 4"),
        ("sequence_batching {}", "cfg.set_dynamic_batching()\nreturn cfg",
         "Configuration specified scheduling_choice as 'sequence_batching'"),
        ('input [{ name: "IN" data_type: TYPE_INT32 dims: [4] }]',
         'cfg.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4]})\nreturn cfg',
         "configuration expects datatype TYPE_INT32 for input 'IN', model provides TYPE_FP32"),
        ('input [{ name: "IN" data_type: TYPE_FP32 dims: [16] }]',
         'cfg.add_input({"name": "IN", "data_type": "TYPE_FP32", "dims": [4]})\nreturn cfg',
         "tensor 'IN': the model expects dims [4] but the model configuration specifies dims "
         "[16]"),
        ("", 'cfg.add_output({"data_type": "TYPE_FP32", "dims": [4]})\nreturn cfg',
         "output in auto-complete-config function for model 'm' is missing 'name' property."),
        ("", 'cfg.add_input({"name": "X", "dims": [4]})\nreturn cfg',
         "input 'X' in auto-complete-config function for model 'm' is missing 'data_type'"),
        ("", 'cfg.add_input({"name": "X", "data_type": "TYPE_FP32", "dims": [4], "shape": 1})'
         "\nreturn cfg", "contains property other than 'name', 'data_type', 'dims' and "
         "'optional'."),
        ("", 'cfg.set_model_transaction_policy({"streaming": True})\nreturn cfg',
         "contains property other than 'decoupled'."),
        ("model_transaction_policy { decoupled: false }",
         "cfg.set_model_transaction_policy(dict(decoupled=True))\nreturn cfg",
         "which is already set to 'False'."),
        ("", "cfg.set_max_batch_size(0)",
         "auto_complete_config function in model 'm' must return a valid pb.ModelConfig object."),
    ],
)
def test_refusals_in_the_backends_words(config_text: str, body: str, words: str) -> None:
    _, error = _complete(config_text, body)
    assert error is not None and words in error


def test_conditional_conflicts_are_not_claimed() -> None:
    _, error = _complete("max_batch_size: 6", """
if something():
    cfg.set_max_batch_size(4)
return cfg
""")
    assert error is None


def test_a_larger_max_batch_size_from_model_py_wins() -> None:
    config, error = _complete("max_batch_size: 2", "cfg.set_max_batch_size(8)\nreturn cfg")
    assert error is None and config.max_batch_size == 8


def test_constant_indexing_of_literal_lists_is_read() -> None:
    facts = _facts("""
outputs = [{"name": "OUT", "data_type": "TYPE_FP32", "dims": [2]}]
cfg.add_output(outputs[0])
return cfg
""")
    assert facts.calls[0].argument == {"name": "OUT", "data_type": "TYPE_FP32", "dims": [2]}


def test_a_list_changed_by_a_method_call_is_no_longer_trusted() -> None:
    facts = _facts("""
specs = [{"name": "A", "data_type": "TYPE_FP32", "dims": [2]}]
specs.append(load_more())
for spec in specs:
    cfg.add_input(spec)
return cfg
""")
    assert not facts.exact and all(not call.known for call in facts.calls)
