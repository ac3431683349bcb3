"""What the server makes of each model directory, derived from the Evidence alone.

The server judges a configuration only after filling in what it infers (backend, platform,
default file name, name) and its defaults; judging the raw text would flag what the server
fills in. Everything here is pure: no I/O, computed once per check.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property, wraps
from typing import Any, TypeVar

from triton_doctor.evidence import (
    INT64_MAX,
    INT64_MIN,
    MAX_TREE_DEPTH,
    CheckOptions,
    ModelDir,
    ModelFile,
    PythonSource,
    RepositoryEvidence,
    Subdir,
)
from triton_doctor.lazy_pattern import LazyPattern
from triton_doctor.records import record
from triton_doctor.triton import model_config, normalize, profiles
from triton_doctor.triton.autocomplete import (
    Completion,
    complete_backend,
    max_batch_size_followed,
)
from triton_doctor.triton.config_locations import field_lines, locate

#: Subdirectories of a model directory that the server never treats as versions.
NON_VERSION_DIRS = frozenset({"warmup", "initial_state", "configs"})
_STOLL = LazyPattern(r"^[ \t\n\v\f\r]*([+-]?)(\d+)")
_T = TypeVar("_T")


@record(frozen=True)
class VersionDir:
    """A subdirectory as the server's version scan reads it."""

    name: str
    #: The version number the server reads from the name, None when it ignores the directory.
    number: int | None
    #: None (a clean version), "reserved", "leading-zeros", "not-numeric", "prefix" (the
    #: number is read from a prefix, like ``1_backup``) or "overflow".
    quirk: str | None


def read_version_dir(name: str) -> VersionDir:
    """Reproduce the server's reading: a leading-zero name is ignored, then ``std::stoll``."""
    if name in NON_VERSION_DIRS:
        return VersionDir(name, None, "reserved")
    if len(name) > 1 and name[0] == "0":
        return VersionDir(name, None, "leading-zeros")
    match = _STOLL.match(name)
    if not match:
        return VersionDir(name, None, "not-numeric")
    number = int(match.group(1) + match.group(2))
    if not INT64_MIN <= number <= INT64_MAX:
        return VersionDir(name, None, "overflow")
    clean = match.group(0) == name and not match.group(1) and name == str(number)
    return VersionDir(name, number, None if clean else "prefix")


def version_dir_name(number: int) -> str:
    """The directory a backend opens for a version: it prints the version as unsigned 64-bit,
    so version -1 (from a directory named ``-1``) is looked up in ``18446744073709551615/``."""
    return str(number % 2**64)


def per_model(compute: Callable[[ModelView], _T]) -> Callable[[ModelView], _T]:
    """``compute(model)`` worked out once per model view and kept on it: what several rules
    read of a model (a comparison with its model file, a scan of its text) costs once per
    check, not once per rule. The result is shared, so callers must not change it."""
    return _kept(compute)


def per_repository(compute: Callable[[RepositoryView], _T]) -> Callable[[RepositoryView], _T]:
    """``compute(repository)`` worked out once per repository view, as ``per_model`` does for
    a model: what several repository rules look through (its ensembles) is found once."""
    return _kept(compute)


def _kept(compute: Callable[[Any], _T]) -> Callable[[Any], _T]:
    """``compute(view)``, kept in the view's ``memo``."""

    @wraps(compute)
    def once(view: Any) -> _T:
        memo = view.memo
        if compute not in memo:
            memo[compute] = compute(view)
        return memo[compute]  # type: ignore[no-any-return]

    return once


class ModelView:
    def __init__(self, model_dir: ModelDir, options: CheckOptions) -> None:
        self.dir = model_dir
        self.name = model_dir.name
        self.options = options
        #: Results of ``per_model`` functions, by function.
        self.memo: dict[Callable[..., Any], Any] = {}
        #: ``model_file``'s answers by version: rules, auto-complete and ``facts`` ask it.
        self._model_files: dict[int, ModelFile | None] = {}

    @property
    def config_path(self) -> str:
        return self.dir.config.path

    @cached_property
    def state(self) -> str:
        """ "parsed", "absent" (no config.pbtxt) or "broken" (unreadable or malformed)."""
        config = self.dir.config
        if self.dir.unreadable:
            return "broken"
        if not config.present:
            return "absent"
        return "parsed" if model_config.parsed(config) is not None else "broken"

    @cached_property
    def raw(self) -> Any:
        """The config as written (an empty config when the file is absent)."""
        parsed = model_config.parsed(self.dir.config)
        return parsed if parsed is not None else model_config.new_config()

    @cached_property
    def _completion(self) -> tuple[Any, str | None]:
        return normalize.complete(self.raw, self.name, self.dir)

    @property
    def core(self) -> Any:
        """The config after core's backend-field inference and normalisation, before the
        backend's own auto-complete: what decides the backend, files and versions."""
        return self._completion[0]

    @property
    def autocomplete_error(self) -> str | None:
        """The server's message when it cannot work out the model's backend."""
        return self._completion[1]

    @cached_property
    def backend_completion(self) -> Completion | None:
        """The backend's auto-complete (None when it does not run: turned off, or no backend)."""
        if self.options.disable_auto_complete_config or self.autocomplete_error:
            return None
        completion = complete_backend(self.core, self.model_file(), self.python_source())
        if completion.error is None:
            normalize.defaults(completion.config)
        return completion

    @cached_property
    def effective(self) -> Any:
        """The config the server judges and runs: core's completion, then the backend's
        auto-complete (unless that refuses the model, when it is core's completion)."""
        completion = self.backend_completion
        if completion is None or completion.error is not None:
            return self.core
        return completion.config

    @property
    def max_batch_size_known(self) -> bool:
        """Whether the effective max_batch_size is the one the server runs: the backend's
        auto-complete does not run, or was followed from what was read."""
        completion = self.backend_completion
        if completion is None or completion.error is not None:
            return True
        return max_batch_size_followed(self.core, self.model_file(), self.python_source())

    @property
    def batches(self) -> bool | None:
        """Whether the server runs the model with a batch dimension (max_batch_size above 0);
        None when the backend's auto-complete decides it from what was not read."""
        return self.effective.max_batch_size > 0 if self.max_batch_size_known else None

    @cached_property
    def on_target(self) -> Any | None:
        """The effective config with its instance groups as the target machine's server
        resolves them (KIND_AUTO decided, GPU ids filled in); None when how many GPUs that
        machine has is unknown."""
        if self.options.gpus is None:
            return None
        config = type(self.effective)()
        config.CopyFrom(self.effective)
        normalize.instance_groups(config, self.options.gpus)
        return config

    @property
    def subdirs_complete(self) -> bool:
        """Whether every subdirectory was listed: when the listing stopped at its budget
        (TD114 says so), which versions are absent, or which subdirectory sorts first, is
        unknown."""
        return self.dir.listing_stopped_after is None

    @cached_property
    def versions(self) -> list[VersionDir]:
        return [read_version_dir(sub.name) for sub in self.dir.subdirs]

    @cached_property
    def available_versions(self) -> list[int]:
        """Version numbers the server finds on disk, sorted."""
        return sorted({v.number for v in self.versions if v.number is not None})

    @cached_property
    def loaded_versions(self) -> list[int]:
        """The versions the version policy selects from those on disk."""
        policy = self.core.version_policy
        available = self.available_versions
        kind = policy.WhichOneof("policy_choice")
        if kind == "all":
            return available
        if kind == "specific":
            return sorted(set(policy.specific.versions) & set(available))
        count = policy.latest.num_versions if kind == "latest" else 1
        return available[-count:] if count > 0 else []

    def expected_model_file(self) -> tuple[str, bool] | None:
        """(file name, may be a directory) the backend opens in a version directory, if known."""
        config = self.effective
        known = config.backend in normalize.DEFAULT_FILENAME or config.platform in (
            normalize.TF_FILENAME)
        if not known or not config.default_model_filename:
            return None
        may_be_dir = config.backend == "onnxruntime" or config.platform == "tensorflow_savedmodel"
        return config.default_model_filename, may_be_dir

    def holds_model_file(self, sub: Subdir) -> bool:
        """Whether a version directory holds the file the backend opens (or a TensorRT
        ``cc_model_filenames`` file); True for one that could not be listed, whose contents
        are unknown."""
        expected = self.expected_model_file()
        if sub.unreadable or expected is None:
            return True
        filename, may_be_dir = expected
        present = set(sub.entries)
        alternatives = set(self.effective.cc_model_filenames.values())
        return (filename in present or (may_be_dir and filename + "/" in present)
                or bool(present & alternatives))

    @property
    def lacks_model_files(self) -> bool:
        """Whether none of the model's subdirectories holds its model file (there may be none):
        a configs-only checkout. False when the backend's file is unknown (an ensemble)."""
        return self.expected_model_file() is not None and not any(
            self.holds_model_file(sub) for sub in self.dir.subdirs)

    def python_source(self) -> PythonSource | None:
        """The Python model file the backend would load for the first selected version."""
        config = self.core
        if config.backend != "python" or not self.loaded_versions:
            return None
        filename = config.default_model_filename or "model.py"
        sub = self.version_dir(self.loaded_versions[0])
        return next((s for s in sub.python if s.name == filename), None) if sub else None

    @property
    def auto_complete_exact(self) -> bool | None:
        """Whether model.py's auto_complete_config was followed exactly (its result is then in
        the effective config); None when there is no model.py or it defines none."""
        source = self.python_source()
        facts = source.auto_complete if source else None
        return None if facts is None else facts.exact

    def model_file(self, version: int | None = None) -> ModelFile | None:
        """The default model file of ``version`` (the first loaded one by default), as read."""
        if version is None:
            if not self.loaded_versions:
                return None
            version = self.loaded_versions[0]
        if version not in self._model_files:
            wanted = f"{version_dir_name(version)}/{self.core.default_model_filename}"
            self._model_files[version] = next(
                (f for f in self.version_files(version) if f.path == wanted), None)
        return self._model_files[version]

    def version_files(self, number: int) -> list[ModelFile]:
        """Every model file read in the directory the backend opens for ``number``."""
        sub = self.version_dir(number)
        return sub.model_files if sub else []

    def version_dir(self, number: int) -> Subdir | None:
        """The directory the backend opens for version ``number``: ``<model>/<number>/``."""
        return next((sub for sub in self.dir.subdirs if sub.name == version_dir_name(number)),
                    None)

    def tree_shows_absent(self, relative: str) -> bool:
        """Whether the listing of the model directory shows that ``relative`` is not there:
        never when the walk stopped at its budget before listing everything, nor for a path
        deeper than the walk goes (MAX_TREE_DEPTH levels: at most that many - 1 slashes)."""
        return (self.dir.tree_stopped_after is None
                and relative.rstrip("/").count("/") < MAX_TREE_DEPTH
                and relative not in self._tree)

    @cached_property
    def _tree(self) -> frozenset[str]:
        return frozenset(self.dir.tree)

    @cached_property
    def _lines(self) -> dict[str, int]:
        return field_lines(self.dir.config.text or "")

    def locate(self, field: str) -> int | None:
        return locate(self._lines, field)

    def written(self, field: str) -> bool:
        """Whether config.pbtxt spells out ``field`` (proto3 cannot tell 0 from absent). A
        text without the field's own name cannot (the text format spells every name out), and
        is not tokenized to say so."""
        name = field.rsplit(".", 1)[-1].partition("[")[0]
        return name in (self.dir.config.text or "") and field in self._lines

    @cached_property
    def facts(self) -> frozenset[str] | None:
        """What rules declare their applicability by (``registry.MODEL_FACTS``): each is what
        such a rule tests first. None when they cannot be worked out, so that every rule runs
        and reports the defect as it would."""
        try:
            config = self.effective
            completion = self.backend_completion
            files = [self.model_file(number) for number in self.loaded_versions]
            flags = {
                "ensemble": config.platform == "ensemble",
                "ensemble_scheduling": config.HasField("ensemble_scheduling"),
                "batching": config.max_batch_size > 0,
                "dynamic_batching": config.HasField("dynamic_batching"),
                "sequence_batching": config.HasField("sequence_batching"),
                "batch_io": bool(config.batch_input or config.batch_output),
                "warmup": bool(config.model_warmup),
                "response_cache": config.response_cache.enable,
                "model_metrics": config.HasField("model_metrics"),
                "runtime": bool(config.runtime),
                "repo_agents": bool(self.raw.model_repository_agents.agents),
                "python_source": self.python_source() is not None,
                "auto_complete_refused": completion is not None and completion.error is not None,
                "onnx_file": any(f is not None and f.onnx is not None for f in files),
                "unusable_file": any(f is not None and f.problem is not None for f in files),
                "lfs_pointers": bool(self.dir.lfs_pointers),
            }
        except Exception:  # the rules that read the same say what failed, as skips
            return None
        return frozenset([f"backend:{config.backend}", *(fact for fact, on in flags.items() if on)])

    def may_apply(self, when: frozenset[str]) -> bool:
        """Whether a rule declared ``when`` (see ``registry.Rule.when``) may find anything."""
        facts = self.facts
        return not when or facts is None or not when.isdisjoint(facts)

    def missing(self, needs: tuple[str, ...]) -> str | None:
        """Why this model cannot feed a rule that needs ``needs``, or None."""
        if "config" not in needs:
            return None
        if self.dir.unreadable:
            return f"model directory unreadable: {self.dir.unreadable}"
        if self.state == "broken":
            return "config.pbtxt could not be read or parsed"
        return None


class RepositoryView:
    def __init__(self, evidence: RepositoryEvidence, options: CheckOptions) -> None:
        self.options = options
        #: The release judged against (the CLI has already rejected unknown versions).
        self.release = profiles.find_release(options.triton_version)
        self.models = [ModelView(model, options) for model in evidence.models]
        self.by_name = {model.name: model for model in self.models}
        #: Results of ``per_repository`` functions, by function.
        self.memo: dict[Callable[..., Any], Any] = {}
