"""The cache of repeated runs and the reading of a repository by several processes change
nothing but the time: the same report, byte for byte, and never one from before an edit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from triton_doctor import cache, evidence
from triton_doctor.checks import model_dir, repository
from triton_doctor.checks.model_fingerprint import SETTLE_NS, fingerprint

from bench.build_repo import build
from tests.helpers import DEMO, ROOT, run_cli

FIXTURES = sorted(str(path) for path in (ROOT / "fixtures" / "rules").glob("*/*") if path.is_dir())


def _settled() -> None:
    """Wait until files written now are old enough to be cached."""
    time.sleep(SETTLE_NS / 1e9 + 0.2)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository of 100 models of every kind (the benchmark's mix), old enough to cache."""
    root = tmp_path_factory.mktemp("mixed") / "repo"
    build(root, 100)
    _settled()
    return root


def _modes(cache_dir: Path, formats: str, *repositories: str) -> dict[str, dict[str, object]]:
    proc = subprocess.run([sys.executable, "-m", "tests.cache_modes", str(cache_dir), formats,
                           *repositories], capture_output=True, text=True, timeout=600,
                          check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs: dict[str, dict[str, object]] = json.loads(proc.stdout)
    return runs


def _by_repository(runs: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    grouped: dict[str, dict[str, object]] = {}
    for key, run in runs.items():
        path, form, mode = key.split("|")
        grouped.setdefault(f"{path}|{form}", {})[mode] = run
    return grouped


def _same_everywhere(runs: dict[str, dict[str, object]]) -> None:
    for where, modes in _by_repository(runs).items():
        first = modes["one process"]
        for mode, run in modes.items():
            assert (run["report"], run["code"]) == (first["report"], first["code"]), (where, mode)


def test_every_way_of_reading_gives_the_same_report(tmp_path: Path, mixed: Path) -> None:
    runs = _modes(tmp_path, "json,text,sarif", str(DEMO), str(mixed))
    _same_everywhere(runs)
    for form in ("json", "text", "sarif"):
        assert runs[f"{mixed}|{form}|one process"]["read"] == 100
        # Every model read once, whichever process read it.
        assert runs[f"{mixed}|{form}|two processes"]["read"] == 100
        assert runs[f"{mixed}|{form}|cache written by two processes"]["read"] == 100
        for path in (mixed, DEMO):
            assert runs[f"{path}|{form}|cache read"]["read"] == 0
            assert runs[f"{path}|{form}|cache read, written by two"]["read"] == 0
    findings = json.loads(str(runs[f"{mixed}|json|one process"]["report"]))["findings"]
    assert findings, "the mix carries mistakes: a report with none would prove nothing"


def test_a_models_cache_entry_is_its_json(mixed: Path) -> None:
    """The text written for the cache is the JSON of the model's evidence, for every kind of
    model in the mix and every rule fixture's."""
    for root in (mixed, *FIXTURES[::7]):
        for model in repository.collect_repository(root).models:
            data = evidence.to_jsonable(model)
            assert json.loads(evidence.json_text(model)) == data
            assert evidence.json_text(model) == json.dumps(data, separators=(",", ":"))


def test_a_record_holding_more_than_its_fields_is_written_by_its_fields(mixed: Path) -> None:
    """A record's own ``__dict__`` is written only where it holds exactly the saved fields."""
    model = repository.collect_repository(mixed).models[0]
    data = evidence.to_jsonable(model)
    model.__dict__["not_a_field"] = 1
    subdir = model.subdirs[0]
    del subdir.__dict__["name"]
    subdir.__dict__["name"] = data["subdirs"][0]["name"]  # same fields, another order
    assert evidence.json_text(model) == json.dumps(data, separators=(",", ":"))


def test_only_a_record_instance_is_written_as_its_fields() -> None:
    """A record class, or an object of no record type, is no Evidence: refused, not written."""
    for value in (evidence.ModelDir, object(), {1, 2}):
        with pytest.raises(TypeError, match="is not JSON data"):
            evidence.json_text([value])


def test_a_models_entry_is_made_when_the_models_file_is_written(tmp_path: Path) -> None:
    """Not before: the process writing the file makes the text, so it never travels between
    the processes that read the models."""
    made: list[str] = []

    def data() -> str:
        made.append("a")
        return "1"

    kept = cache.RepositoryCache(str(tmp_path), "repo")
    kept.keep_model("a", "key-a", data)
    assert made == []
    assert kept.save_models()
    assert made == ["a"]
    assert cache.RepositoryCache(str(tmp_path), "repo").model("a", "key-a") == 1


def test_every_rule_fixture_reads_the_same_every_way(tmp_path: Path) -> None:
    _same_everywhere(_modes(tmp_path, "json", *FIXTURES))


def test_an_unchanged_repository_is_judged_from_metadata_alone(
        tmp_path: Path, mixed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = repository.collect_repository(mixed, cache_dir=str(tmp_path))
    assert first.fingerprint is not None
    first.cache.save()

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was read although nothing changed")

    monkeypatch.setattr(model_dir, "collect_model", no_reading)
    again = repository.collect_repository(mixed, cache_dir=str(tmp_path))
    assert again == first
    assert again.fingerprint == first.fingerprint


def _edit(path: Path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (the same length) and put the mtime back, as a careless
    tool would: only the ctime tells."""
    assert len(old) == len(new)
    status = path.stat()
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def test_an_edited_config_or_model_file_is_read_again(tmp_path: Path, mixed: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(mixed, repo)
    _settled()
    cache_dir = tmp_path / "cache"
    before = run_cli("check", "--format", "json", "--cache-dir", str(cache_dir), str(repo))
    config = next(repo.glob("onnx_*/config.pbtxt"))
    _edit(config, b"TYPE_FP32", b"TYPE_FP16")
    model_file = next(repo.glob("preprocess_*/1/model.py"))
    _edit(model_file, b'by_name(request, "INPUT0")', b'by_name(request, "INPUTX")')
    cached = run_cli("check", "--format", "json", "--cache-dir", str(cache_dir), str(repo))
    fresh = run_cli("check", "--format", "json", "--no-cache", str(repo))
    assert cached.stdout == fresh.stdout
    assert cached.stdout != before.stdout
    changed = {(f["model"], f["rule"]) for f in json.loads(cached.stdout)["findings"]} - {
        (f["model"], f["rule"]) for f in json.loads(before.stdout)["findings"]}
    assert {model for model, _ in changed} == {config.parent.name, model_file.parent.parent.name}


def test_a_same_size_edit_with_its_mtime_put_back_changes_the_fingerprint(
        tmp_path: Path) -> None:
    model = tmp_path / "m"
    (model / "1").mkdir(parents=True)
    config = model / "config.pbtxt"
    config.write_text('backend: "onnxruntime"\nmax_batch_size: 8\n')
    later = time.time_ns() + 2 * SETTLE_NS
    before = fingerprint(str(model), later)
    time.sleep(0.05)
    _edit(config, b"8", b"9")
    assert before is not None
    assert fingerprint(str(model), later) not in (None, before)


def test_models_that_cannot_be_fingerprinted_are_read_every_time(tmp_path: Path) -> None:
    model = tmp_path / "m"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('backend: "python"\n')
    later = time.time_ns() + 2 * SETTLE_NS
    assert fingerprint(str(model), later) is not None
    assert fingerprint(str(model), time.time_ns()) is None  # changed a moment ago
    (model / "1" / "model.py").symlink_to("/etc/hostname")  # a link may lead anywhere
    assert fingerprint(str(model), later) is None


def test_a_model_fingerprinted_by_its_listed_entry_is_fingerprinted_as_by_its_path(
        tmp_path: Path) -> None:
    """The repository's listing tells a directory from a link to one without a ``stat``: the
    same fingerprint for the one, none for the other (a link may lead anywhere)."""
    model = tmp_path / "m"
    (model / "1").mkdir(parents=True)
    (model / "config.pbtxt").write_text('backend: "python"\n')
    (tmp_path / "linked").symlink_to(model)
    later = time.time_ns() + 2 * SETTLE_NS
    entries = {entry.name: entry for entry in os.scandir(tmp_path)}
    assert fingerprint(entries["m"], later) == fingerprint(str(model), later) is not None
    assert fingerprint(entries["linked"], later) is None
    assert fingerprint(str(tmp_path / "linked"), later) is None


def test_a_fingerprint_hands_its_listings_to_the_reader_only_when_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model read from the fingerprint's listings is the model read by listing again, and
    lists nothing itself; a walk that stopped (at a link) hands over nothing."""
    model = tmp_path / "m"
    for version in ("1", "2"):
        (model / version).mkdir(parents=True)
        (model / version / "model.py").write_text("class TritonPythonModel:\n    pass\n")
    (model / "config.pbtxt").write_text('backend: "python"\nmax_batch_size: 8\n')
    listed: dict[str, list[os.DirEntry[str]]] = {}
    assert fingerprint(str(model), time.time_ns() + 2 * SETTLE_NS, listed) is not None
    assert sorted(listed) == [str(model), str(model / "1"), str(model / "2")]
    assert [e.name for e in listed[str(model)]] == ["1", "2", "config.pbtxt"]
    entry = next(e for e in os.scandir(tmp_path) if e.name == "m")
    fresh = model_dir.collect_model(entry, None, str(tmp_path))
    monkeypatch.setattr(model_dir, "_list", lambda *args: pytest.fail(f"listed {args}"))
    assert model_dir.collect_model(entry, None, str(tmp_path), listed) == fresh
    (model / "2" / "weights").symlink_to("/etc/hostname")
    listed = {str(model): []}
    assert fingerprint(str(model), time.time_ns() + 2 * SETTLE_NS, listed) is None
    assert listed == {}


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def test_a_damaged_or_foreign_cache_is_a_miss(tmp_path: Path, mixed: Path) -> None:
    cache_dir = tmp_path / "cache"
    fresh = run_cli("check", "--format", "json", "--no-cache", str(mixed))
    assert run_cli("check", "--format", "json", "--cache-dir", str(cache_dir),
                   str(mixed)).stdout == fresh.stdout
    (models,) = (cache_dir / "v1").glob("*.models.json")
    (index,) = set((cache_dir / "v1").glob("*.json")) - {models}

    def wrong_shapes(document: dict[str, Any]) -> None:
        for entry in document.get("models", {}).values():
            entry["data"]["subdirs"] = "not a list"
        for entry in document.get("results", []):
            entry["data"]["findings"] = [{"rule": 5}]

    _rewrite(models, wrong_shapes)
    _rewrite(index, wrong_shapes)
    misread = run_cli("check", "--format", "json", "--cache-dir", str(cache_dir), str(mixed))
    assert (misread.stdout, misread.returncode) == (fresh.stdout, fresh.returncode)
    models.write_bytes(b"\x00garbage")
    index.write_bytes(b"{")
    garbage = run_cli("check", "--format", "json", "--cache-dir", str(cache_dir), str(mixed))
    assert (garbage.stdout, garbage.stderr) == (fresh.stdout, fresh.stderr)
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    unwritable = run_cli("check", "--format", "json", "--cache-dir", str(not_a_directory),
                         str(mixed))
    assert (unwritable.stdout, unwritable.stderr) == (fresh.stdout, fresh.stderr)


def test_models_written_by_another_run_since_are_not_taken_for_these(
        tmp_path: Path, mixed: Path) -> None:
    """Two runs at once: the index may say the models file holds this repository after
    another run rewrote that file. Each model is still taken only under its own key."""
    cache_dir = tmp_path / "cache"
    run_cli("check", "--format", "json", "--cache-dir", str(cache_dir), str(mixed))
    (models,) = (cache_dir / "v1").glob("*.models.json")

    def other_keys(document: dict[str, Any]) -> None:
        for entry in document["models"].values():
            entry["key"] = "written for other contents"
            entry["data"]["config"]["text"] = 'backend: "python"\n'

    _rewrite(models, other_keys)
    for flags in (["--format", "sarif"], ["--format", "json", "--select", "TD3"]):
        cached = run_cli("check", *flags, "--cache-dir", str(cache_dir), str(mixed))
        fresh = run_cli("check", *flags, "--no-cache", str(mixed))
        assert (cached.stdout, cached.returncode) == (fresh.stdout, fresh.returncode)


def test_another_build_of_the_tool_ignores_the_cache(tmp_path: Path, mixed: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    first = repository.collect_repository(mixed, cache_dir=str(tmp_path))
    first.cache.save()
    monkeypatch.setattr(cache, "tool_stamp", lambda: "another build")
    read = []
    original = model_dir.collect_model
    monkeypatch.setattr(model_dir, "collect_model",
                        lambda *args, **kwargs: read.append(1) or original(*args, **kwargs))
    repository.collect_repository(mixed, cache_dir=str(tmp_path))
    assert len(read) == 100


def test_work_shared_out_comes_back_in_order_and_a_failure_is_raised_here() -> None:
    script = (
        "from triton_doctor.parallel import can_fork, map_apart\n"
        "assert can_fork()\n"
        "import os\n"
        "parent = os.getpid()\n"
        "print(map_apart(lambda n: n * n, list(range(9)), 3, str, int))\n"
        "def fails_in_children(n):\n"
        "    if os.getpid() != parent: raise RuntimeError('child')\n"
        "    return n\n"
        "print(map_apart(fails_in_children, list(range(6)), 2, str, int))\n"
        "def fails_late_in_children(n):  # after sending some runs back\n"
        "    if os.getpid() != parent and n >= 30: raise RuntimeError('child')\n"
        "    return n\n"
        "print(map_apart(fails_late_in_children, list(range(48)), 2) == list(range(48)))\n"
        "try:\n"
        "    map_apart(lambda n: 1 // (n - 5), list(range(6)), 2, str, int)\n"
        "except ZeroDivisionError:\n"
        "    print('raised here')\n"
    )
    assert _printed(script) == ["[0, 1, 4, 9, 16, 25, 36, 49, 64]", "[0, 1, 2, 3, 4, 5]",
                                "True", "raised here"]


def test_a_process_busy_with_its_own_work_takes_fewer_items() -> None:
    """Items are taken as each process asks: while this one sleeps through ``meanwhile``, the
    child takes the runs (every item sleeps too, so the two need no CPU to show it)."""
    script = (
        "import os, time\n"
        "from triton_doctor.parallel import map_apart\n"
        "def work(n):\n"
        "    time.sleep(0.005)\n"
        "    return os.getpid()\n"
        "pids = map_apart(work, list(range(48)), 2, meanwhile=lambda: time.sleep(0.5))\n"
        "print(len(pids), pids.count(os.getpid()))\n"
        "pids = map_apart(work, list(range(48)), 2)\n"
        "print(len(pids), len(set(pids)))\n"
    )
    busy, shared = (line.split() for line in _printed(script))
    total, here = map(int, busy)
    assert total == 48 and here < 12
    assert shared == ["48", "2"]


def test_results_come_back_as_they_were_made_whichever_way_they_travel() -> None:
    """Plain data goes through the pipe by marshal, anything else pickled: both come back
    equal, types included (a str subclass is no str, a tuple no list). This process sleeps
    while the child takes the items."""
    script = (
        "import enum, sys, time\n"
        "from triton_doctor.parallel import map_apart\n"
        "from triton_doctor.findings import Skipped\n"
        "class Kind(str, enum.Enum):\n"
        "    A = 'a'\n"
        "plain = lambda n: (str(n), None, [n, 1.5], {'k': (n,)})\n"
        "made = lambda n: [Skipped('TD1', str(n), 'why'), Kind.A]\n"
        "buffers = lambda n: [n, bytearray(b'ab')]  # marshal would give bytes back\n"
        "for work in (plain, made, buffers):\n"
        "    here = [work(n) for n in range(6)]\n"
        "    apart = map_apart(work, list(range(6)), 2, meanwhile=lambda: time.sleep(0.3))\n"
        "    assert apart == here and [type(x[1]) for x in apart] == [type(x[1]) for x in here]\n"
        "    print('pickle' in sys.modules)\n"
    )
    assert _printed(script) == ["False", "True", "True"]


def test_runs_cover_every_item_once_and_taper_at_the_end() -> None:
    """The last runs are short, so that no process is left with a long one while the others
    are done; the runs stay within what a ticket pipe holds."""
    from triton_doctor.parallel import MAX_RUNS, _runs

    for count, jobs in [(1, 2), (9, 3), (64, 2), (1000, 2), (100_000, 8), (100_000, 300)]:
        runs = _runs(count, jobs)
        assert [start for start, _ in runs] == [0] + [stop for _, stop in runs[:-1]]
        assert runs[-1][1] == count and all(stop > start for start, stop in runs)
        assert len(runs) <= MAX_RUNS // 2
    sizes = [stop - start for start, stop in _runs(1000, 2)]
    assert sizes[0] == 21 and sizes[-1] <= 2 and sizes == sorted(sizes, reverse=True)


def _printed(script: str) -> list[str]:
    """The lines ``script`` prints, run in a process of its own (pytest's may have threads,
    and then nothing forks)."""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    return proc.stdout.splitlines()


def test_the_cache_never_touches_what_is_not_its_own(tmp_path: Path, mixed: Path) -> None:
    """--cache-dir names a shared folder: its other files stay, and a link planted under a
    cache file's name is replaced, never written through."""
    shared = tmp_path / "shared"
    shared.mkdir()
    for index in range(70):
        (shared / f"report{index}.json").write_text("{}")
    run_cli("check", "--format", "json", "--cache-dir", str(shared), str(mixed))
    assert len(list(shared.glob("report*.json"))) == 70
    (written,) = (shared / "v1").glob("*.models.json")
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    written.unlink()
    written.symlink_to(victim)
    for index_file in (shared / "v1").glob("*.json"):
        if index_file != written:
            index_file.write_text('{"complete": null}')  # the models must be written again
    fresh = run_cli("check", "--format", "json", "--no-cache", str(mixed))
    assert run_cli("check", "--format", "json", "--cache-dir", str(shared),
                   str(mixed)).stdout == fresh.stdout
    assert victim.read_text() == "mine"
    assert not written.is_symlink()


def test_a_deeply_nested_cache_file_is_a_miss(tmp_path: Path, mixed: Path) -> None:
    cache_dir = tmp_path / "cache"
    run_cli("check", "--format", "json", "--cache-dir", str(cache_dir), str(mixed))
    for written in (cache_dir / "v1").glob("*.json"):
        written.write_text("[" * 200_000 + "]" * 200_000)
    fresh = run_cli("check", "--format", "sarif", "--no-cache", str(mixed))
    cached = run_cli("check", "--format", "sarif", "--cache-dir", str(cache_dir), str(mixed))
    assert (cached.stdout, cached.stderr) == (fresh.stdout, fresh.stderr)


def test_a_model_kept_after_the_models_file_was_written_is_written_too(tmp_path: Path) -> None:
    kept = cache.RepositoryCache(str(tmp_path), "repo")
    kept.keep_model("a", "key-a", lambda: "1")
    assert kept.save_models()
    kept.keep_model("b", "key-b", lambda: "2")
    kept.save()
    again = cache.RepositoryCache(str(tmp_path), "repo")
    assert again.records_models()
    assert (again.model("a", "key-a"), again.model("b", "key-b")) == (1, 2)


def test_a_user_without_a_home_gets_an_uncached_check(mixed: Path) -> None:
    env = {key: value for key, value in os.environ.items()
           if key not in ("HOME", "XDG_CACHE_HOME")}
    script = ("import pathlib, sys\n"
              "def no_home(): raise RuntimeError('Could not determine home directory.')\n"
              "pathlib.Path.home = staticmethod(no_home)\n"
              "from triton_doctor.cli import main\n"
              f"sys.exit(main(['check', '--format', 'json', {str(mixed)!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["findings"]
    assert "Traceback" not in proc.stderr


def test_a_cached_result_naming_rules_it_did_not_run_is_a_miss(tmp_path: Path,
                                                              mixed: Path) -> None:
    cache_dir = tmp_path / "cache"
    run_cli("check", "--format", "json", "--cache-dir", str(cache_dir), str(mixed))
    (index,) = set((cache_dir / "v1").glob("*.json")) - set((cache_dir / "v1").glob("*.models.*"))

    def unknown_rule(document: dict[str, Any]) -> None:
        for entry in document["results"]:
            entry["data"]["findings"][0]["rule"] = "TD999"

    _rewrite(index, unknown_rule)
    fresh = run_cli("check", "--format", "sarif", "--no-cache", str(mixed))
    cached = run_cli("check", "--format", "sarif", "--cache-dir", str(cache_dir), str(mixed))
    assert (cached.stdout, cached.returncode) == (fresh.stdout, fresh.returncode)
