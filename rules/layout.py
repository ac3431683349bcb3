"""TD1xx: the repository's layout — model directories, versions, files the server opens."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from triton_doctor.findings import Hit, Severity
from triton_doctor.registry import rule
from triton_doctor.rules._common import names_text
from triton_doctor.triton.repository_model import ModelView, RepositoryView, version_dir_name

_VERSION_LIKE = re.compile(r"\d|^(latest|current|stable|prod)$", re.IGNORECASE)
#: Directories that tools leave in repositories and that are never models.
JUNK_DIRS = {"__pycache__", "lost+found", "__MACOSX"}
#: Files of a version directory named in a message (a weights folder holds thousands).
HOLDS_SHOWN = 10


def is_stray(model: ModelView) -> bool:
    """A hidden or tool-made directory without a config: the server still polls it as a model."""
    return (model.name.startswith(".") or model.name in JUNK_DIRS) and not model.dir.config.present


@rule("TD101", "stray-directory", "error", "Non-model directory in the repository", needs=(),
      server_says=("Invalid model name: Could not determine backend for model",
                   "at least one version must be available under the version policy of model"))
def stray_directory(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: hidden or tool-made directories at the repository root (`.git`,
    `.ipynb_checkpoints`, `__pycache__`, `lost+found`) that hold no config.pbtxt.

    Why it matters: the server treats every subdirectory as a model, hidden ones included.
    The directory fails to load, and at startup that turns into "failed to load all models":
    with the default --exit-on-error the server exits.

    Example: `model_repository/.ipynb_checkpoints/` → delete it.

    Fix: remove the directory (and keep it out with .dockerignore / .gitignore), or serve
    with `--model-control-mode=explicit --load-model=<name>`.
    """
    if is_stray(model):
        yield Hit(
            message=f"'{model.name}' is not a model, but the server polls every subdirectory "
            "of the repository as one and fails on it",
            triton_message=_stray_message(model),
            fix=f"Delete {model.dir.path}, or start the server with "
            "--model-control-mode=explicit and --load-model for each real model.",
            path=model.dir.path,
        )


def _stray_message(model: ModelView) -> str | None:
    """What the server logs on a stray directory; None when its listing stopped before
    showing which subdirectory the server looks in and which versions there are."""
    if not model.subdirs_complete:
        return None
    return model.autocomplete_error or (
        None if model.loaded_versions else _no_version_message(model))


@rule("TD102", "backend-undetermined", "error", "The server cannot tell the model's backend",
      server_says=("Invalid model name: Could not determine backend for model",))
def backend_undetermined(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: a model with no `backend`, `platform` or `default_model_filename`,
    whose first subdirectory holds no file the server recognises (model.plan, model.onnx,
    model.pt, model.py, ...) and whose directory name has no `.<backend>` suffix.

    Why it matters: the server gives up: "Could not determine backend for model".

    Example: a config.pbtxt with only inputs and outputs → add `backend: "onnxruntime"`.

    Fix: set `backend` (or `platform`) in config.pbtxt, and put the model file in a version
    directory under its default name.
    """
    if model.autocomplete_error and not is_stray(model) and model.subdirs_complete:
        yield Hit(
            message=f"nothing says which backend runs '{model.name}': no backend or platform "
            "in the config and no recognised model file in its first subdirectory",
            triton_message=model.autocomplete_error,
            fix='Add backend: "<name>" (e.g. "onnxruntime", "python") to config.pbtxt.',
            field="backend",
        )


@rule("TD103", "name-mismatch", "error", "Config name differs from the directory name",
      server_says=("unexpected directory name '", "directory name must equal model name"))
def name_mismatch(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `name` in config.pbtxt equals the model's directory name.

    Why it matters: the server refuses the model ("directory name must equal model name").

    Example: directory `resnet50/` with `name: "resnet"` → `name: "resnet50"`.

    Fix: make them equal, or delete the name line (the server then takes the directory name).
    """
    config = model.effective
    if config.name != model.name:
        yield Hit(
            message=f"config name '{config.name}' is not the directory name '{model.name}'",
            triton_message=f"unexpected directory name '{model.name}' for model "
            f"'{config.name}', directory name must equal model name",
            fix=f'Write name: "{model.name}" or delete the name line.',
            field="name",
        )


def _no_version_message(model: ModelView) -> str:
    return (
        f"at least one version must be available under the version policy of model '{model.name}'"
    )


@rule("TD104", "no-loadable-version", "error", "No version for the server to load",
      server_says=("at least one version must be available under the version policy of model",))
def no_loadable_version(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: that the version policy selects at least one version directory that is
    present (numeric names only; `v1`, `01`, `latest` do not count).

    Why it matters: the model never loads ("at least one version must be available"; the
    startup table says "No model version was found").

    Example: `my_model/model.onnx` → `my_model/1/model.onnx`.

    Fix: put the model files in a numeric version directory (`1/`), and check
    `version_policy`.

    With `--configs-only`, a model without any version directory is not reported: git keeps
    no empty directory.
    """
    if model.loaded_versions or is_stray(model) or not model.subdirs_complete:
        return
    found = [v.name for v in model.versions if v.quirk != "reserved"]
    if not found and model.options.configs_only:
        return
    yield Hit(
        message=f"no version directory the policy selects; subdirectories: {names_text(found)}",
        triton_message=_no_version_message(model),
        fix=f"Create {model.dir.path}/1/ with the model file in it"
        + (" (version names are plain integers)" if found else "")
        + ", or make version_policy select a present version.",
        path=model.dir.path,
    )


@rule("TD105", "version-dir-ignored", "warning", "Version directory the server ignores", needs=(),
      server_says=("which contains leading zeros in its directory name",
                   "which fails to convert to integral number"))
def version_dir_ignored(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: subdirectories whose names the server skips as versions: leading zeros
    (`01`, `001`) or no leading integer (`v1`, `latest`, `.ipynb_checkpoints`).

    Why it matters: the files in them are never served; the server only logs a warning.
    Directories that look like versions (a digit in the name, `latest`, `current`) are
    warnings; others (`tokenizer/`, `assets/` next to a Python model) are info, since
    keeping assets there is deliberate and harmless.

    Example: `my_model/01/` → `my_model/1/`.

    Fix: name versions with plain integers, without leading zeros; move other directories
    out of the model directory.
    """
    for version in model.versions:
        if version.quirk == "leading-zeros":
            text = (
                f"ignore version directory '{version.name}' which contains leading zeros in "
                "its directory name"
            )
        elif version.quirk == "not-numeric":
            text = (
                f"ignore version directory '{version.name}' which fails to convert to "
                "integral number"
            )
        else:
            continue
        looks_like_version = version.quirk == "leading-zeros" or bool(
            _VERSION_LIKE.search(version.name)
        )
        yield Hit(
            message=f"subdirectory '{version.name}' is not a version: the server ignores it",
            triton_message=text,
            severity=None if looks_like_version else Severity.INFO,
            fix=f"Rename it to a plain integer (e.g. {version.name.lstrip('0') or '0'}) if it "
            "is a version, or move it out of the model directory.",
            path=f"{model.dir.path}/{version.name}",
        )


@rule("TD106", "version-dir-misread", "warning", "Version directory the server misreads", needs=())
def version_dir_misread(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: subdirectory names the server reads as a number taken from their start
    (`1_backup` is version 1, `2.old` is 2, `-1` is -1), and numbers too large for int64.

    Why it matters: the backend then opens `<model>/<number>/`, not the directory you meant:
    `1` and `1_backup` collapse into one version, and a lone `1_backup` leads to "file not
    found" (for Python models, a load that hangs). An int64 overflow throws inside the
    server.

    Example: `my_model/1_backup/` → move it out of the repository.

    Fix: keep only plain integer directories in a model directory.
    """
    for version in model.versions:
        if version.quirk == "overflow":
            yield Hit(
                message=f"subdirectory '{version.name}' is a number beyond int64: the server's "
                "version parsing throws on it",
                fix="Rename it to a small integer.",
                severity=Severity.ERROR,
                path=f"{model.dir.path}/{version.name}",
            )
        elif version.quirk == "prefix":
            yield Hit(
                message=f"subdirectory '{version.name}' is read as version {version.number}, "
                f"but its files are looked up in '{version_dir_name(version.number or 0)}/'",
                fix=(
                    f"Rename it to '{version.number}'"
                    if (version.number or 0) >= 0
                    else "Rename it to a positive integer"
                )
                + " or move it out of the model "
                "directory.",
                path=f"{model.dir.path}/{version.name}",
            )


@rule("TD107", "specific-version-missing", "warning", "version_policy names an absent version",
      server_says=("but the version directory is not present",))
def specific_version_missing(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: versions listed in `version_policy { specific { versions: [...] } }`
    that have no directory.

    Why it matters: the server logs an error and loads the rest; clients asking for that
    version get "is not found".

    Example: `versions: [ 1, 2 ]` with only `1/` → `versions: [ 1 ]`.

    Fix: add the version directory, or remove the version from the policy.

    With `--configs-only`, a model without any version directory is not reported.
    """
    policy = model.effective.version_policy
    if policy.WhichOneof("policy_choice") != "specific" or not model.subdirs_complete:
        return
    if model.options.configs_only and not model.available_versions:
        return
    for number in policy.specific.versions:
        if number not in model.available_versions:
            yield Hit(
                message=f"version_policy lists version {number}, which has no directory",
                triton_message=f"version {number} is specified for model '{model.name}', but "
                "the version directory is not present",
                fix=f"Create {number}/ or drop {number} from the policy.",
                field="version_policy",
            )


def _missing_file_message(model: ModelView, path: str) -> str | None:
    backend = model.effective.backend
    if backend == "python":
        # The stub's own words, logged while the load hangs (it never answers).
        return f"Failed to preinitialize Python stub: Python model file not found in '{path}'"
    if backend == "onnxruntime":
        return f"failed to stat file {path}"
    if backend == "tensorrt" and not model.options.disable_auto_complete_config:
        return f"unable to load plan file to auto complete config: {path}"
    if backend in ("tensorrt", "pytorch"):
        return f"unable to find '{path}'"
    return None


@rule("TD108", "model-file-missing", "error", "The model file is missing from a version",
      server_says=("failed to stat file", "Python model file not found", "unable to find '",
                   "unable to load plan file to auto complete config"))
def model_file_missing(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: every version the policy loads holds the file its backend opens:
    `default_model_filename`, else model.plan / model.onnx / model.pt / model.py /
    model.xml (`cc_model_filenames` for TensorRT counts too).

    Why it matters: the version fails to load. For a Python model it is worse: the load
    hangs forever in LOADING and the server cannot be stopped with SIGTERM.

    Example: `my_model/1/yolov8.onnx` → rename it to `model.onnx`, or set
    `default_model_filename: "yolov8.onnx"`.

    Fix: name the file as the backend expects, or set `default_model_filename`.

    Silent with `--configs-only` (the model files are kept elsewhere).
    """
    expected = model.expected_model_file()
    if expected is None or model.options.configs_only:
        return
    filename = expected[0]
    for number in model.loaded_versions:
        sub = model.version_dir(number)
        if sub is not None and model.holds_model_file(sub):
            continue  # (one TD111 says is unreadable holds what it may)
        present = set(sub.entries if sub else [])
        directory = version_dir_name(number)
        path = f"{model.dir.path}/{directory}/{filename}"
        hangs = model.effective.backend == "python"
        holds = "that directory does not exist" if sub is None else _holds(present)
        yield Hit(
            message=f"version {number}: no {filename} in {directory}/ ({holds})"
            + ("; the server's load of this model hangs instead of failing" if hangs else ""),
            triton_message=_missing_file_message(model, path),
            fix=f"Put the model at {path}, or set default_model_filename to the file's name.",
            version=str(number),
            path=f"{model.dir.path}/{number}",
        )


def _holds(entries: set[str]) -> str:
    """"it holds: a, b, c" naming at most HOLDS_SHOWN of a version directory's files."""
    files = sorted(e for e in entries if not e.endswith("/"))
    shown = ", ".join(files[:HOLDS_SHOWN]) or "nothing"
    more = len(files) - HOLDS_SHOWN
    return f"it holds: {shown}" + (f" and {more} more files" if more > 0 else "")


def config_templates(model: ModelView) -> list[str]:
    """Templates of config.pbtxt in the model directory (``config.pbtxt.in``,
    ``*.pbtxt.tmpl``), rendered by a deploy step, never by the server."""
    return sorted(p for p in model.dir.tree
                  if p == "config.pbtxt.in" or ("/" not in p and p.endswith(".pbtxt.tmpl")))


@rule("TD109", "config-missing", "info", "No config.pbtxt", needs=(),
      server_says=("config.pbtxt: No such file or directory",))
def config_missing(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: model directories without config.pbtxt.

    Why it matters: with auto-complete (the default) the server builds the config from the
    model file, which works for ONNX and TensorRT but leaves Python models without inputs
    and outputs unless model.py fills them, and picks max_batch_size for you. With
    `--disable-auto-complete-config` the model fails to load.

    A template in its place (`config.pbtxt.in`, `*.pbtxt.tmpl`) is named: the server never
    reads it.

    Example: `my_model/1/model.onnx` alone → add `my_model/config.pbtxt` with
    `backend: "onnxruntime"` and the batch size you want.

    Fix: write config.pbtxt; `triton-doctor config <model dir>` prints the configuration the
    server would build (`/v2/models/<m>/config` of a running server shows the same).
    """
    if model.dir.config.present or model.dir.unreadable or is_stray(model):
        return
    strict = model.options.disable_auto_complete_config
    templates = config_templates(model)
    yield Hit(
        message="no config.pbtxt: "
        + (
            "with --disable-auto-complete-config the model cannot load"
            if strict
            else "the server will auto-complete the configuration from the model file"
        )
        + (f"; a template sits in its place, which the server never reads: "
           f"{names_text(templates)} (render it to config.pbtxt before judging or serving)"
           if templates else ""),
        triton_message=f"failed to open text file for read {model.config_path}: No such file "
        "or directory"
        if strict
        else None,
        fix=f"Write {model.config_path}: `triton-doctor config {model.dir.path}` prints the "
        "configuration the server would build, as a starting point.",
        severity=Severity.ERROR if strict else None,
        path=model.dir.path,
    )


@rule("TD110", "label-file", "error", "Output label file missing or outside the model",
      server_says=("failed to open text file for read", "label file path '",
                   "is outside model directory"))
def label_file(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each output's `label_filename` names a file inside the model directory
    (the path is relative to the model directory, not the version directory).

    Why it matters: the model fails to load.

    Example: `label_filename: "1/labels.txt"` with the file at `labels.txt` →
    `label_filename: "labels.txt"`.

    Fix: put the labels file in the model directory and name it relative to it.
    """
    for index, output in enumerate(model.effective.output):
        if not output.label_filename:
            continue
        relative = posixpath.normpath(output.label_filename)
        path = f"{model.dir.path}/{output.label_filename}"
        if relative.startswith("../") or relative == ".." or output.label_filename.startswith("/"):
            yield Hit(
                message=f"label file '{output.label_filename}' of output '{output.name}' is "
                "outside the model directory",
                triton_message=f"label file path '{path}' for output '{output.name}' in model "
                f"'{model.effective.name}' is outside model directory",
                fix="Move the labels file into the model directory.",
                field=f"output[{index}].label_filename",
            )
        elif model.tree_shows_absent(relative):
            yield Hit(
                message=f"label file '{output.label_filename}' of output '{output.name}' does "
                "not exist",
                triton_message=f"failed to open text file for read {path}: No such file or "
                "directory",
                fix=f"Create {path}, one label per line.",
                field=f"output[{index}].label_filename",
            )


@rule("TD111", "model-dir-unreadable", "error", "Model directory cannot be read", needs=())
def model_dir_unreadable(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: that every model directory, and every subdirectory in it, can be
    listed: no permission problem, no symbolic link loop or dangling link.

    Why it matters: the server fails to poll the directory (a dangling link can fail the
    listing of the whole repository); a version directory it cannot read fails that
    version's load. Other unreadable subdirectories, versions the version policy does not
    load among them, are warnings: the server skips them, but a model that reads its own
    assets fails.

    Example: `chmod 700` by another user on a shared volume → readable by the server's user.

    Fix: fix permissions, or remove the broken link.
    """
    if model.dir.unreadable:
        yield Hit(
            message=f"{model.dir.path}: {model.dir.unreadable}",
            fix="Make the directory readable by the server's user, or remove the broken link.",
            path=model.dir.path,
        )
    for sub, version in zip(model.dir.subdirs, model.versions, strict=True):
        if sub.unreadable:
            path = f"{model.dir.path}/{sub.name}"
            loads = version.number in model.loaded_versions
            if loads:
                consequence = f"; version {version.number} cannot load"
            elif version.number is not None:
                consequence = f"; the version policy does not load version {version.number}"
            else:
                consequence = ""
            yield Hit(
                message=f"{path} cannot be read: {sub.unreadable}{consequence}",
                fix=f"Make {path} readable by the server's user (chmod a+rx), or remove it.",
                severity=None if loads else Severity.WARNING,
                path=path,
            )


@rule(
    "TD112",
    "autocomplete-wrong-dir",
    "warning",
    "The server infers the backend from a non-version directory",
)
def autocomplete_wrong_dir(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: a config without `backend`/`platform`, where the lexicographically first
    subdirectory — the only one the server looks into to guess the backend — is not a
    version (e.g. `.ipynb_checkpoints` sorts before `1`).

    Why it matters: the server guesses from the wrong files, or fails to guess at all.

    Example: `my_model/.ipynb_checkpoints/` + `my_model/1/model.onnx` → remove the hidden
    directory, or add `backend: "onnxruntime"`.

    Fix: set `backend` explicitly, and keep only versions in the model directory.
    """
    raw = model.raw
    if (raw.backend or raw.platform or raw.default_model_filename or not model.versions
            or not model.subdirs_complete):
        return
    first = model.versions[0]
    if first.quirk is not None and model.available_versions:
        yield Hit(
            message=f"the server guesses the backend from '{first.name}/', the first "
            f"subdirectory by name, not from a version directory",
            fix="Add backend to config.pbtxt, or remove the directory.",
            path=f"{model.dir.path}/{first.name}",
        )


@rule("TD113", "runtime-escapes", "error", "runtime points outside the backend directory",
      server_says=("escapes backend directory",), when=("runtime",))
def runtime_escapes(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: a `runtime` library given as a path, found in the version or model
    directory (searched in that order), must not lead out of the directory it is found in.
    A library found nowhere is TD505's.

    Why it matters: the server refuses a library that leads out of its search directory
    ("backend library name '../libtriton_custom.so' escapes backend directory").

    Example: `runtime: "../libtriton_custom.so"` with the library in the model directory →
    write `runtime: "libtriton_custom.so"`.

    Fix: place the library in the model or version directory, and name it without `..`.
    """
    runtime = model.effective.runtime
    if not runtime or runtime == "model.py" or "/" not in runtime:
        return  # a bare file name cannot lead out of where it is found
    tree = set(model.dir.tree)
    name = model.effective.name
    search = [version_dir_name(v) for v in model.loaded_versions[:1]] + [""]
    for base in search:
        target = posixpath.normpath(posixpath.join(base or ".", runtime))
        if target in tree:  # found here: the server then checks it stays inside ``base``
            if target.startswith("../") or (base and not target.startswith(base + "/")):
                libdir = f"{model.dir.path}/{base}" if base else model.dir.path
                yield Hit(
                    message=f"runtime '{runtime}' resolves outside {libdir}",
                    triton_message=f"backend library name '{runtime}' escapes backend directory "
                    f"'{libdir}', for model '{name}', check model config runtime field",
                    fix="Copy the library into the model directory and give its bare file name.",
                    field="runtime",
                )
            return


@rule("TD114", "check-incomplete", "warning", "Part of the model is too large to check", needs=())
def check_incomplete(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: whether triton-doctor had to stop reading part of a model: a directory
    of over 100,000 entries, a model directory of over 100,000 paths, a model file whose
    metadata (zip directory, ONNX graph inputs, outputs, initializers or nodes) is larger
    than any real model's, or a model.py auto_complete_config too large or too deeply
    nested to follow.

    Why it matters: such sizes come from a broken export or a hostile repository, and they
    would cost minutes and gigabytes to walk. The rest is judged; what was not read is not,
    so a clean report is not a clean bill of health for that part.

    Example: `1/` holding 150,000 shard files → keep weights in fewer, larger files.

    Fix: look at what the message names; remove stray files, or re-export the model.
    """
    if model.dir.listing_stopped_after is not None:
        yield _stopped(model.dir.path, model.dir.listing_stopped_after,
                       "subdirectories past that point, and what would rest on their "
                       "absence (versions, the backend guess, version_policy), are not judged")
    elif model.dir.tree_stopped_after is not None:
        yield _stopped(model.dir.path, model.dir.tree_stopped_after,
                       "files referenced by the config (labels, warmup data, runtime) "
                       "that are not among them are not judged", what="paths below it")
    for sub in model.dir.subdirs:
        if sub.listing_stopped_after is not None:
            yield _stopped(f"{model.dir.path}/{sub.name}", sub.listing_stopped_after,
                           "the files the backend loads were still looked up by name")
        for found in sub.model_files:
            if found.not_read:
                yield Hit(
                    message=f"{found.path} was not fully read: {found.not_read}; rules that "
                    "compare the config with the model file did not judge it",
                    fix="Check how the file was exported: real models stay far below this.",
                    path=f"{model.dir.path}/{found.path}",
                    evidence={"size_bytes": found.size_bytes},
                )
    yield from _auto_complete_not_followed(model)


def _auto_complete_not_followed(model: ModelView) -> Iterator[Hit]:
    """model.py's auto_complete_config, when a budget stopped following it."""
    source = model.python_source()
    facts = source.auto_complete if source else None
    if (source is None or facts is None or not facts.not_followed
            or model.options.disable_auto_complete_config):
        return
    path = f"{version_dir_name(model.loaded_versions[0])}/{source.name}"
    yield Hit(
        message=f"auto_complete_config of {path} was not followed to its end: "
        f"{facts.not_followed}; findings that depend on what it sets are not reported",
        fix="Check what auto_complete_config sets by hand, or write those settings in "
        "config.pbtxt.",
        path=f"{model.dir.path}/{path}",
        line=facts.line,
    )


def _stopped(path: str, count: int, consequence: str, what: str = "entries") -> Hit:
    return Hit(
        message=f"listing of {path} stopped after {count} {what}; {consequence}",
        fix=f"Move what does not belong in {path} out of the model repository.",
        path=path,
        evidence={"entries_listed": count},
    )
