"""The settings file: discovery, precedence under command-line flags, waivers, bad files."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import GOOD_CONFIG, check_json, run_cli, write_model

ZERO_DIM = GOOD_CONFIG.replace("dims: [ 4 ] } ]\noutput", "dims: [ 0 ] } ]\noutput")
NO_BATCHER = GOOD_CONFIG.replace("dynamic_batching { max_queue_delay_microseconds: 100 }", "")


def _project(tmp_path: Path, settings: str, name: str = ".triton-doctor.toml") -> Path:
    """A project (its root holds .git) with the settings file at its root, above the repository:
    outside a project that file would not apply."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / name).write_text(settings)
    repo = tmp_path / "model_repository"
    write_model(repo, "video_encoder", ZERO_DIM)
    write_model(repo, "ranker", NO_BATCHER)
    return repo


def test_fail_on_and_ignore_from_the_nearest_file(tmp_path: Path) -> None:
    repo = _project(tmp_path, 'fail-on = "warning"\nignore = ["TD212"]\n')
    proc = run_cli("check", str(repo))
    assert proc.returncode == 1  # the TD224 warning now fails the run
    rules = {f["rule"] for f in check_json(repo)["findings"]}
    assert "TD212" not in rules and "TD224" in rules
    assert run_cli("check", "--fail-on", "error", str(repo)).returncode == 0  # the flag wins


def test_pyproject_section_is_found(tmp_path: Path) -> None:
    repo = _project(tmp_path, '[project]\nname = "x"\n\n[tool.triton-doctor]\nselect = ["TD2"]\n',
                    name="pyproject.toml")
    rules = {f["rule"] for f in check_json(repo)["findings"]}
    assert rules and all(rule.startswith("TD2") for rule in rules)


def test_waiver_by_model_glob_needs_and_keeps_its_reason(tmp_path: Path) -> None:
    repo = _project(tmp_path, '[[waive]]\nrules = ["invalid-dims"]\nmodels = ["video_*"]\n'
                              'reason = "dims fixed at export"\n')
    report = check_json(repo)
    assert "TD212" not in {f["rule"] for f in report["findings"]}
    (waived,) = report["suppressed"]
    assert waived["model"] == "video_encoder"
    assert waived["reason"].startswith("dims fixed at export (")
    assert run_cli("check", str(repo)).returncode == 0


def test_bad_settings_are_a_usage_error_naming_the_file(tmp_path: Path) -> None:
    for text, needle in [
        ("fail_on = 'warning'\n", "unknown setting(s) fail_on"),
        ("select = [\n", "not valid TOML"),
        ("[[waive]]\nrules = ['TD212']\n", "needs a reason"),
        ("select = ['TD999']\n", "TD999"),
    ]:
        repo = _project(tmp_path, text)
        proc = run_cli("check", str(repo))
        assert proc.returncode == 2, (text, proc.stdout, proc.stderr)
        assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_explicit_config_flag(tmp_path: Path) -> None:
    repo = _project(tmp_path, "")
    other = tmp_path / "ci.toml"
    other.write_text('select = ["TD224"]\n')
    rules = {f["rule"] for f in check_json(repo, "--config", str(other))["findings"]}
    assert rules == {"TD224"}


def test_gpus_names_the_machine_and_must_be_a_count(tmp_path: Path) -> None:
    repo = _project(tmp_path, "gpus = 0\n")
    write_model(repo, "on_gpu", GOOD_CONFIG + "instance_group [ { kind: KIND_GPU } ]\n")
    assert "TD236" in {f["rule"] for f in check_json(repo)["findings"]}
    assert "TD236" not in {f["rule"] for f in check_json(repo, "--gpus", "1")["findings"]}
    for text in ("gpus = -1\n", "gpus = \"0\"\n", "gpus = true\n", "gpus = 1.0\n"):
        repo = _project(tmp_path, text)
        proc = run_cli("check", str(repo))
        assert proc.returncode == 2, (text, proc.stdout, proc.stderr)
        assert "gpus must be a whole number" in proc.stderr


def test_agents_and_backends_installed_in_the_image_are_declared(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    repo = tmp_path / "model_repository"
    agents = 'model_repository_agents { agents [ { name: "decrypt" } ] }\n'
    write_model(repo, "ranker", GOOD_CONFIG + agents)
    write_model(repo, "scorer", GOOD_CONFIG.replace('backend: "python"', 'backend: "mine"'))
    before = {f["rule"] for f in check_json(repo)["findings"]}
    assert {"TD504", "TD507"} <= before
    (tmp_path / ".triton-doctor.toml").write_text('repo-agents = ["decrypt"]\n'
                                                  'backends = ["mine"]\n')
    after = {f["rule"] for f in check_json(repo)["findings"]}
    assert not {"TD504", "TD507"} & after
