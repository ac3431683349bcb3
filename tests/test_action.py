"""The GitHub Action (action.yml): its shell steps run as a runner would run them, with the
variables GitHub sets. Left to GitHub: actions/setup-python (the test's Python stands in) and
github/codeql-action/upload-sarif (the test reads the SARIF file it would upload)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import GOOD_CONFIG, ROOT, write_model

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def _evaluate(text: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
    """The ``${{ inputs.X }}`` and ``${{ steps.ID.outputs.Y }}`` of a step's env; any other
    expression fails the test, since this runner would not know its value."""

    def value(match: re.Match[str]) -> str:
        words = match.group(1).split(".")
        if words[0] == "inputs" and len(words) == 2:
            return inputs[words[1]]
        if words[0] == "steps" and len(words) == 4 and words[2] == "outputs":
            return outputs.get(words[1], {}).get(words[3], "")
        raise AssertionError(f"expression not run by this test: {match.group(0)}")

    return EXPRESSION.sub(value, text)


def _run_action(work: Path, inputs: dict[str, str]) -> tuple[int, dict[str, dict[str, str]]]:
    """Runs the action's ``run:`` steps in order, as GitHub's bash shell does, until one fails;
    returns that exit code (0 when all pass) and the steps' outputs."""
    given = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    given.update(inputs)
    environment = _runner_python(work)
    outputs: dict[str, dict[str, str]] = {}
    for number, step in enumerate(ACTION["runs"]["steps"]):
        if "run" not in step:
            continue
        output_file = work / f"output-{number}"
        output_file.write_text("")
        env = {**environment, "GITHUB_ACTION_PATH": str(ROOT), "GITHUB_WORKSPACE": str(work),
               "RUNNER_TEMP": str(work / "runner-temp"), "GITHUB_OUTPUT": str(output_file)}
        env.update({key: _evaluate(str(text), given, outputs)
                    for key, text in step.get("env", {}).items()})
        script = work / f"step-{number}.sh"
        script.write_text(step["run"])
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=work, env=env, capture_output=True, text=True, timeout=300,
                              check=False)
        if "id" in step:
            outputs[step["id"]] = dict(
                line.split("=", 1) for line in output_file.read_text().splitlines())
        if proc.returncode:
            return proc.returncode, outputs
    return 0, outputs


def _runner_python(work: Path) -> dict[str, str]:
    """What setup-python leaves: a ``python`` first on PATH. A fresh virtual environment that
    sees this one's packages, so that installing the action's checkout needs no index."""
    venv = work / "python"
    if not venv.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        site = next((venv / "lib").glob("python*/site-packages"))
        (site / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env.pop("VIRTUAL_ENV", None)
    (work / "runner-temp").mkdir(exist_ok=True)
    return env


def _results(outputs: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    sarif = json.loads(Path(outputs["check"]["sarif"]).read_text())
    return sarif["runs"][0]["results"]


def test_action_reports_sarif_then_fails_on_findings(tmp_path: Path) -> None:
    write_model(tmp_path / "models", "classifier",
                GOOD_CONFIG.replace("max_batch_size: 8", "max_batch_size: ${max_batch_size}"))
    write_model(tmp_path / "models", "detector", GOOD_CONFIG)

    code, outputs = _run_action(tmp_path, {"path": "models"})
    assert (tmp_path / "python" / "bin" / "triton-doctor").exists(), "installed from the action"
    assert code == 1
    assert outputs["check"]["exit-code"] == "1"
    assert {result["ruleId"] for result in _results(outputs)} == {"TD202"}

    code, outputs = _run_action(tmp_path, {"path": "models", "args": "--exit-zero --select TD1"})
    assert (code, outputs["check"]["exit-code"]) == (0, "0")
    assert _results(outputs) == []
