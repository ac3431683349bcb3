"""model.py read with ast as the stub runs it: where TritonPythonModel may come from, and what
initialize certainly reads from its configuration."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from triton_doctor.checks.python_source import read_python_source
from triton_doctor.evidence import PythonSource

from tests.helpers import GOOD_CONFIG, check_json, write_model

HEAD = "import json\nimport triton_python_backend_utils as pb_utils\n\n"


def _read(tmp_path: Path, text: str) -> PythonSource:
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return read_python_source(str(path))


def _initialize(tmp_path: Path, body: str) -> list[tuple[str, str, int]]:
    indented = textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8)
    text = f"{HEAD}class TritonPythonModel:\n    def initialize(self, args):\n{indented}\n"
    return [(r.kind, r.name, r.line) for r in _read(tmp_path, text).initialize_reads]


@pytest.mark.parametrize("text", ["", "class Model:\n    pass\n", "class TritonPythonModle:\n"
                                  "    def execute(self, requests):\n        return []\n",
                                  # The name in a string (python_backend's example docstring).
                                  'class TritonPythonModle:\n    """Every Python model must have '
                                  '"TritonPythonModel" as the class name."""\n'])
def test_model_class_certainly_absent(tmp_path: Path, text: str) -> None:
    source = _read(tmp_path, text)
    assert not source.has_model_class and not source.may_define_model_class


@pytest.mark.parametrize("text", [
    "from impl import TritonPythonModel\n",
    "from impl import Model as TritonPythonModel\n",
    "from impl import *\n",
    "class Impl:\n    pass\n\nTritonPythonModel = Impl\n",
    "import sys\nif sys.platform:\n    class TritonPythonModel:\n        pass\n",
    "try:\n    class TritonPythonModel:\n        pass\nexcept ImportError:\n    pass\n",
    "def __getattr__(name):\n    return object\n",
    "class Impl:\n    pass\n\nglobals()['TritonPythonModel'] = Impl\n",
    "class Impl:\n    pass\n\nlocals().update(TritonPythonModel=Impl)\n",
    "import sys\nsetattr(sys.modules[__name__], 'TritonPython' + 'Model', object)\n",
    "exec(open('impl.py').read())\n",
])
def test_model_class_maybe_defined(tmp_path: Path, text: str) -> None:
    source = _read(tmp_path, text)
    assert not source.has_model_class and source.may_define_model_class


READS_KEY = """\
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.key = config["parameters"]["KEY"]
"""


@pytest.mark.parametrize("text", [
    # The stub gets another class: a later class statement, or an import after it.
    f"class TritonPythonModel:\n{READS_KEY}\nclass TritonPythonModel:\n    pass\n",
    f"class TritonPythonModel:\n{READS_KEY}\nfrom impl import TritonPythonModel\n",
    # What runs is not initialize as written.
    f"class TritonPythonModel:\n    @tolerant\n{READS_KEY}",
    f"class TritonPythonModel:\n{READS_KEY}    initialize = tolerant(initialize)\n",
    f"@tolerant\nclass TritonPythonModel:\n{READS_KEY}",
])
def test_initialize_of_another_class_or_wrapped_is_not_followed(tmp_path: Path,
                                                                text: str) -> None:
    assert _read(tmp_path, HEAD + text).initialize_reads == []


def test_the_last_class_statement_is_the_model_class(tmp_path: Path) -> None:
    source = _read(tmp_path, HEAD + "class TritonPythonModel:\n    def execute(self, requests):\n"
                   "        return []\n\n"
                   f"class TritonPythonModel:\n{READS_KEY}")
    assert [(r.kind, r.name) for r in source.initialize_reads] == [("parameter", "KEY")]
    assert source.methods == ["initialize"]


def test_straight_line_reads_are_recorded_in_order(tmp_path: Path) -> None:
    reads = _initialize(tmp_path, """
        self.model_config = model_config = json.loads(args["model_config"])
        output0_config = pb_utils.get_output_config_by_name(model_config, "OUTPUT0")
        self.dtype = pb_utils.triton_string_to_numpy(output0_config["data_type"])
        self.dims = pb_utils.get_input_config_by_name(self.model_config, "INPUT0")["dims"]
        params = model_config["parameters"]
        self.key = params["KEY"]["string_value"]
        self.other = json.loads(args["model_config"])["parameters"]["OTHER"]
        self.third = model_config.get("parameters", {})["THIRD"]
    """)
    assert reads == [("output", "OUTPUT0", 8), ("input", "INPUT0", 9), ("parameter", "KEY", 11),
                     ("parameter", "OTHER", 12), ("parameter", "THIRD", 13)]


@pytest.mark.parametrize("body", [
    # The result checked first: a missing name never reaches the subscript.
    """
    config = json.loads(args["model_config"])
    out = pb_utils.get_output_config_by_name(config, "OPTIONAL")
    if out is not None:
        self.dtype = out["data_type"]
    """,
    """
    config = json.loads(args["model_config"])
    out = pb_utils.get_output_config_by_name(config, "OPTIONAL")
    assert out is not None, "declare OPTIONAL"
    self.dtype = out["data_type"]
    """,
    # Reads with a default, or only on one side of a condition.
    """
    config = json.loads(args["model_config"])
    self.key = config["parameters"].get("KEY", {}).get("string_value")
    self.flag = config["parameters"]["FLAG"] if "FLAG" in config["parameters"] else None
    """,
    # After a branch that may return or raise, nothing is certain.
    """
    config = json.loads(args["model_config"])
    if not config["parameters"]:
        return
    self.key = config["parameters"]["KEY"]
    """,
    """
    config = json.loads(args["model_config"])
    try:
        self.key = config["parameters"]["KEY"]
    except KeyError:
        self.key = None
    """,
    # The configuration handed to unknown code, which may change it.
    """
    config = json.loads(args["model_config"])
    fill_defaults(config)
    self.key = config["parameters"]["KEY"]
    """,
    # The configuration changed through a part of it, an alias, or a method of self.
    """
    self.model_config = json.loads(args["model_config"])
    self.model_config["parameters"].update(DEFAULTS)
    self.key = self.model_config["parameters"]["KEY"]
    """,
    """
    config = json.loads(args["model_config"])
    config["parameters"].setdefault("KEY", {"string_value": "x"})
    self.key = config["parameters"]["KEY"]
    """,
    """
    config = json.loads(args["model_config"])
    fill_defaults(config["parameters"])
    self.key = config["parameters"]["KEY"]
    """,
    """
    self.model_config = json.loads(args["model_config"])
    self._fill_defaults()
    self.key = self.model_config["parameters"]["KEY"]
    """,
    """
    config = json.loads(args["model_config"])
    params = config["parameters"]
    config["parameters"]["KEY"] = {"string_value": "x"}
    self.key = params["KEY"]["string_value"]
    """,
    """
    config = json.loads(args["model_config"])
    params = config["parameters"]
    params |= DEFAULTS
    self.key = config["parameters"]["KEY"]
    """,
    """
    config = json.loads(args["model_config"])
    config["output"].append({"name": "EXTRA", "data_type": "TYPE_FP32"})
    self.dtype = pb_utils.get_output_config_by_name(config, "EXTRA")["data_type"]
    """,
    """
    config = json.loads(args["model_config"])
    outs = config["output"]
    outs.append({"name": "EXTRA", "data_type": "TYPE_FP32"})
    self.dtype = pb_utils.get_output_config_by_name(config, "EXTRA")["data_type"]
    """,
    """
    config = json.loads(args["model_config"])
    out = pb_utils.get_output_config_by_name(config, "OUTPUT0")
    out["name"] = "EXTRA"
    self.dtype = pb_utils.get_output_config_by_name(config, "EXTRA")["data_type"]
    """,
    """
    config = json.loads(args["model_config"])
    self.holder = {"outputs": config["output"]}
    self._add_outputs()
    self.dtype = pb_utils.get_output_config_by_name(config, "EXTRA")["data_type"]
    """,
    # Not the model configuration.
    """
    config = json.loads(args["other"])
    self.key = config["parameters"]["KEY"]
    """,
    """
    config = json.loads(args["model_config"])
    config = {"parameters": {"KEY": 1}}
    self.key = config["parameters"]["KEY"]
    """,
])
def test_uncertain_reads_are_not_recorded(tmp_path: Path, body: str) -> None:
    assert _initialize(tmp_path, body) == []


def test_only_the_first_failing_read_is_an_error(tmp_path: Path) -> None:
    """The load stops at the first read that fails: a later one never runs, and its words
    are not what the server says."""
    model_py = HEAD + textwrap.dedent("""\
        class TritonPythonModel:
            def initialize(self, args):
                config = json.loads(args["model_config"])
                self.key = config["parameters"]["MISSING"]
                self.out = pb_utils.get_output_config_by_name(config, "OUT")["data_type"]

            def execute(self, requests):
                return []
        """)
    write_model(tmp_path, "m", GOOD_CONFIG, {"1/model.py": model_py})
    findings = [(f["rule"], f["triton_message"]) for f in check_json(tmp_path)["findings"]
                if f["rule"] in ("TD314", "TD315")]
    assert findings == [("TD315", "KeyError: 'MISSING'")]


BROKEN_MODEL_PY = (HEAD + "class TritonPythonModle:\n" + READS_KEY
                   + "    def execute(self, requests):\n        return []\n")


@pytest.mark.parametrize("beside", ["model.cpython-310-x86_64-linux-gnu.so", "model.abi3.so",
                                    "model.so", "model/__init__.py", "model/__init__.pyc"])
def test_a_compiled_or_package_model_is_what_python_imports(tmp_path: Path, beside: str) -> None:
    """Python's import takes a package or an extension module before model.py, whose presence
    alone the stub checks: what model.py says is not what runs."""
    write_model(tmp_path, "m", GOOD_CONFIG, {"1/model.py": BROKEN_MODEL_PY, f"1/{beside}": ""})
    rules = {f["rule"] for f in check_json(tmp_path)["findings"]}
    assert not rules & {"TD310", "TD313", "TD314", "TD315"}, rules


def test_a_directory_named_like_the_module_without_init_does_not_replace_it(
        tmp_path: Path) -> None:
    """A ``model/`` directory of weights is no package: Python still imports model.py."""
    write_model(tmp_path, "m", GOOD_CONFIG, {"1/model.py": BROKEN_MODEL_PY,
                                             "1/model/weights.bin": ""})
    rules = {f["rule"] for f in check_json(tmp_path)["findings"]}
    assert "TD313" in rules, rules


def test_a_long_list_of_configured_names_is_cut_short(tmp_path: Path) -> None:
    outputs = ", ".join(f'{{ name: "OUT{n}" data_type: TYPE_FP32 dims: [ 4 ] }}'
                        for n in range(1000))
    config = GOOD_CONFIG.replace(
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]', f"output [ {outputs} ]")
    write_model(tmp_path, "m", config, {"1/model.py": HEAD + textwrap.dedent("""\
        class TritonPythonModel:
            def initialize(self, args):
                config = json.loads(args["model_config"])
                self.out = pb_utils.get_output_config_by_name(config, "MISSING")["data_type"]
        """)})
    [message] = [f["message"] for f in check_json(tmp_path)["findings"] if f["rule"] == "TD314"]
    assert message.endswith("(1,000 in all)), so the lookup returns None") and len(message) < 3000


def test_a_guard_that_raises_without_the_parameter_is_a_read(tmp_path: Path) -> None:
    source = _read(tmp_path, HEAD + textwrap.dedent("""\
        class TritonPythonModel:
            def initialize(self, args):
                config = json.loads(args["model_config"])
                params = config.get("parameters", {})
                if "MODE" not in params:
                    raise pb_utils.TritonModelException("the parameter MODE is required")
                if not params.get("SCALE"):
                    logger.error("no scale")
                    raise ValueError(f"SCALE is {params.get('SCALE')}")
                if config["parameters"].get("BIAS") is None:
                    raise RuntimeError("BIAS missing")
                if "TOP_K" not in params:
                    raise KeyError("TOP_K is required")
                if "OPTIONAL" not in params:
                    self.optional = None
                if "OTHER" in params:
                    raise ValueError("OTHER is not supported")
                self.key = params["KEY"]
        """))
    assert [(r.name, r.line, r.raises) for r in source.initialize_reads] == [
        ("MODE", 8, "TritonModelException: the parameter MODE is required"),
        ("SCALE", 10, ""), ("BIAS", 13, "RuntimeError: BIAS missing"),
        ("TOP_K", 15, "KeyError: 'TOP_K is required'")]


@pytest.mark.parametrize("header", ["class TritonPythonModel(Base):",
                                    "class TritonPythonModel(metaclass=Registered):",
                                    "@register\nclass TritonPythonModel:"])
def test_an_auto_complete_config_a_base_may_give_is_not_known(tmp_path: Path,
                                                               header: str) -> None:
    """The stub asks the class for auto_complete_config, inherited ones included."""
    source = _read(tmp_path, f"{header}\n    def execute(self, requests):\n        return []\n")
    assert source.auto_complete is not None and not source.auto_complete.exact
    plain = _read(tmp_path, "class TritonPythonModel(object):\n    pass\n")
    assert plain.auto_complete is None
