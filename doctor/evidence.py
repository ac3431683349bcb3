"""The Evidence: everything the collectors saw, typed and JSON-serialisable.

Rules judge only this. Each part is present or carries the reason it could not be collected,
so a rule can say "skipped: <why>" instead of guessing.
"""

from __future__ import annotations

import enum
import functools
import math
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from triton_doctor import records
from triton_doctor.records import field, record

EVIDENCE_SCHEMA = 1
#: Deepest nesting kept of free-form JSON (a served config, plan metadata): real ones nest
#: under ten levels, and writing JSON recurses once per level (a config 500 deep made
#: ``snapshot`` die with RecursionError).
MAX_JSON_DEPTH = 64
#: Triton keeps counts, sizes and dims in 64 bits: signed (int64) or, for counters and NVML's
#: and the kernel's sizes, unsigned (uint64).
INT64_MIN, INT64_MAX, UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


if TYPE_CHECKING:  # the live parts, imported when first named (``__getattr__``)
    from triton_doctor.live_evidence import ContainerEvidence as ContainerEvidence
    from triton_doctor.live_evidence import FleetEvidence as FleetEvidence
    from triton_doctor.live_evidence import FleetReplica as FleetReplica
    from triton_doctor.live_evidence import FleetTarget as FleetTarget
    from triton_doctor.live_evidence import GpuDevice as GpuDevice
    from triton_doctor.live_evidence import GpuEvidence as GpuEvidence
    from triton_doctor.live_evidence import GpuProcess as GpuProcess
    from triton_doctor.live_evidence import HostEvidence as HostEvidence
    from triton_doctor.live_evidence import LogEvidence as LogEvidence
    from triton_doctor.live_evidence import LogOccurrence as LogOccurrence
    from triton_doctor.live_evidence import MetricSample as MetricSample
    from triton_doctor.live_evidence import MetricsEvidence as MetricsEvidence
    from triton_doctor.live_evidence import MetricsScrape as MetricsScrape
    from triton_doctor.live_evidence import ModelStats as ModelStats
    from triton_doctor.live_evidence import ServerEvidence as ServerEvidence
    from triton_doctor.live_evidence import ServerModel as ServerModel
    from triton_doctor.live_evidence import ServerSample as ServerSample
    from triton_doctor.live_evidence import ShmRegion as ShmRegion
    from triton_doctor.live_evidence import ShmSegment as ShmSegment


def __getattr__(name: str) -> Any:
    """A live part's class (``from triton_doctor.evidence import ServerEvidence``), imported
    the first time one is named."""
    if not name.startswith("__"):
        _load_live()
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _load_live() -> None:
    """Bind the live parts' classes here, where Evidence's type hints are resolved."""
    from triton_doctor import live_evidence

    globals().update({name: value for name, value in vars(live_evidence).items()
                      if isinstance(value, type) and value.__module__ == live_evidence.__name__})


def _type_hints(cls: Any) -> dict[str, Any]:
    """``cls``'s field types; Evidence's name the live parts, loaded first."""
    if cls is Evidence:
        _load_live()
    return typing.get_type_hints(cls)


class EvidenceError(ValueError):
    """Data without the Evidence's shape (a malformed snapshot); the message names the field."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


@record(frozen=True)
class SyntaxProblem:
    """Why a config.pbtxt does not parse, where, in libprotobuf's wording where we know it."""

    line: int | None
    column: int | None
    detail: str

    def describe(self) -> str:
        """Where and why, in our words: libprotobuf counts columns differently, so this does not
        pretend to be the server's log line."""
        where = f"line {self.line}, column {self.column}: " if self.line else ""
        return f"{where}{self.detail}"


@record
class ConfigFile:
    """One model's config.pbtxt as read from disk (``text`` is None when it could not be read)."""

    path: str
    present: bool
    text: str | None = None
    size_bytes: int = 0
    #: Why the file could not be read as text (a directory, unreadable, binary, too large).
    unreadable: str | None = None
    #: Where and why the text does not parse as ``inference.ModelConfig``.
    syntax_error: SyntaxProblem | None = None
    #: The parsed ModelConfig, kept by ``model_config.parsed`` (never saved in a snapshot).
    _parsed: Any = field(default=None, repr=False, compare=False, metadata={"transient": True})


@record
class AutoCompleteCall:
    """One call ``auto_complete_config`` makes on the config object it is given."""

    #: "set_max_batch_size", "add_input", "add_output", "set_dynamic_batching",
    #: "set_model_transaction_policy".
    method: str
    #: The argument, when it is a literal the code spells out (or builds from literals).
    argument: Any = None
    #: Whether ``argument`` was read; False when it is computed at run time.
    known: bool = True
    #: Whether the call sits in a branch or loop whose outcome is not known statically.
    conditional: bool = False
    line: int = 0


@record
class AutoCompleteFacts:
    """TritonPythonModel.auto_complete_config, followed statement by statement with ``ast``."""

    calls: list[AutoCompleteCall] = field(default_factory=list)
    #: Whether any ``return`` in it returns a value (without one the stub gets None).
    returns_value: bool = False
    #: Whether every statement was understood, so ``calls`` is exactly what runs.
    exact: bool = True
    #: What was left unfollowed and why (a budget ran out, nesting too deep); None if nothing.
    not_followed: str | None = None
    line: int = 0


@record
class ConfigRead:
    """A read of the model configuration by a literal name that ``initialize`` certainly
    runs (a statement at its top level, before any return) and that raises when the
    configuration lacks the name."""

    #: "input" or "output" (``pb_utils.get_*_config_by_name(model_config, "X")``, whose
    #: None result is then subscripted), or "parameter" (``model_config["parameters"]["K"]``).
    kind: str
    name: str
    line: int = 0
    #: Set when initialize raises on its own where the parameter is missing
    #: (``if "K" not in params: raise ValueError("...")``): the exception as the stub prints it
    #: ("ValueError: K is required"), "" when its words are not written out. None for a read
    #: that fails by itself (KeyError, TypeError).
    raises: str | None = None


@record
class PythonSource:
    """What ``ast`` sees in a .py file of a version directory (it is never imported)."""

    name: str
    #: Whether a module-level class TritonPythonModel is defined.
    has_model_class: bool = False
    #: Whether the module may define TritonPythonModel some other way: bound by an import
    #: or an assignment, a class statement inside a module-level if/try/with, a star import,
    #: a module ``__getattr__``, or code that writes names dynamically (exec, globals()).
    may_define_model_class: bool = False
    #: Methods defined in TritonPythonModel.
    methods: list[str] = field(default_factory=list)
    #: Python's own report when the file does not parse ("SyntaxError: expected ':' (model.py,
    #: line 2)"), as the Python backend's stub prints it when it imports the file.
    syntax_error: str | None = None
    #: Why the file could not be read at all.
    unreadable: str | None = None
    auto_complete: AutoCompleteFacts | None = None
    #: Tensor names written as string literals: ``get_input_tensor_by_name(request, "X")``
    #: and ``pb_utils.Tensor("Y", ...)``, with the line of their first use.
    input_names: dict[str, int] = field(default_factory=dict)
    output_names: dict[str, int] = field(default_factory=dict)
    #: What ``TritonPythonModel.initialize`` certainly reads from its model configuration.
    initialize_reads: list[ConfigRead] = field(default_factory=list)
    #: What Python imports for the module instead of this file, which is then not read: a
    #: package (``model/__init__.py``) or a compiled extension (``model.cpython-310-...so``)
    #: beside it. None when the file is what the stub imports.
    imported_instead: str | None = None


@record
class TensorInfo:
    """One input or output as a model file declares it."""

    name: str
    #: Triton's name for the element type ("TYPE_FP32"), "TYPE_INVALID" when Triton has none,
    #: None when the file does not say (TorchScript).
    data_type: str | None = None
    #: The full shape the model declares, batch dimension included; -1 for a dynamic or
    #: symbolic dimension; None when the rank is unknown.
    dims: list[int] | None = None
    #: The element type in the file's own terms ("FLOAT", "Tensor", "Dict[str, Tensor]").
    source_type: str = ""
    #: Whether this is a plain tensor (ONNX sequences and maps are not).
    is_tensor: bool = True
    #: OpenVINO's layout annotation ("[N,C,H,W]"); its backend batches only along an N axis.
    layout: str = ""


@record
class OnnxFacts:
    ir_version: int = 0
    #: Operator-set versions by domain ("" is the default ONNX domain).
    opsets: dict[str, int] = field(default_factory=dict)
    #: Names of initializers: inputs that an initializer backs may be left out of the config.
    initializer_inputs: list[str] = field(default_factory=list)
    #: External data files the graph references (relative to the .onnx file) that are absent.
    missing_external_data: list[str] = field(default_factory=list)
    #: External data locations that are absolute or lead out of the .onnx file's directory;
    #: they are never looked up (the lookup would tell whether any file on the host exists).
    outside_external_data: list[str] = field(default_factory=list)


@record
class PlanFacts:
    """What a TensorRT plan's header tells without deserialising it (an inferred layout)."""

    #: "ftrt" (TensorRT >= 8.6 container), "ptrt" (engine blob only) or "legacy" (no magic).
    container: str = ""
    #: "major.minor.patch.build", or "" when not found.
    tensorrt_version: str = ""
    #: "major.minor" of the GPU the plan was built for, or "" when not found.
    compute_capability: str = ""
    multiprocessor_count: int | None = None
    #: Ultralytics' JSON metadata prefix, when the export wrote one.
    metadata: dict[str, Any] = field(default_factory=dict)


@record
class TorchScriptArg:
    name: str
    #: The annotation as TorchScript code writes it ("Tensor", "List[Tensor]", "float").
    annotation: str = ""


@record
class TorchScriptFacts:
    #: forward()'s arguments after self; None when the code could not be found.
    forward_args: list[TorchScriptArg] | None = None


@record
class ModelFile:
    """A model file (or directory) a backend would load, read by its byte layout only."""

    #: Path relative to the model directory, "/"-separated ("1/model.onnx").
    path: str
    size_bytes: int = 0
    #: What the bytes are: "onnx", "torchscript", "tensorrt", "openvino", "python",
    #: "directory", "empty", "lfs-pointer", "pickle", "zip", "unknown".
    kind: str = "unknown"
    #: Why the file cannot be what its backend needs (truncated, a pickle, ...), or None.
    problem: str | None = None
    #: Why the reader stopped short of what it needs (a budget ran out on an attacker-sized
    #: structure); the facts it holds are then partial, and inputs/outputs None.
    not_read: str | None = None
    inputs: list[TensorInfo] | None = None
    outputs: list[TensorInfo] | None = None
    onnx: OnnxFacts | None = None
    tensorrt: PlanFacts | None = None
    torchscript: TorchScriptFacts | None = None


@record
class Subdir:
    """A subdirectory of a model directory (a version directory, or something else)."""

    name: str
    #: Names of the entries inside it; directories end with "/". When the listing stopped
    #: (``listing_stopped_after``), the files the backend loads were still looked up by name.
    entries: list[str] = field(default_factory=list)
    unreadable: str | None = None
    #: The number of entries listed when the listing reached its budget (the directory holds
    #: more); None when every entry is listed.
    listing_stopped_after: int | None = None
    #: The backend's model file inside it (model.py by default), as ``ast`` reads it.
    python: list[PythonSource] = field(default_factory=list)
    #: The model files inside it that the model's backend would load, read by header.
    model_files: list[ModelFile] = field(default_factory=list)


#: How many levels below a model directory ``ModelDir.tree`` lists: deeper paths are unknown.
MAX_TREE_DEPTH = 4


@record
class ModelDir:
    """A subdirectory of the repository: the server treats every one as a model."""

    name: str
    path: str
    config: ConfigFile
    subdirs: list[Subdir] = field(default_factory=list)
    #: Every path below the model directory (relative, "/"-separated, directories end with "/"),
    #: up to a depth and count limit: enough to resolve label, warmup and runtime references.
    tree: list[str] = field(default_factory=list)
    #: The number of paths in ``tree`` when the walk reached its budget; None when complete.
    tree_stopped_after: int | None = None
    #: The number of entries listed in the model directory itself when its listing reached
    #: its budget; None when every entry is listed.
    listing_stopped_after: int | None = None
    #: Sizes in bytes of the data files the server reads: ``warmup/*``, ``initial_state/*``.
    data_files: dict[str, int] = field(default_factory=dict)
    #: Git LFS pointers among the files of ``tree``: path -> the size the pointer records.
    lfs_pointers: dict[str, str] = field(default_factory=dict)
    unreadable: str | None = None


@record
class RepositoryEvidence:
    path: str
    models: list[ModelDir] = field(default_factory=list)
    #: The run's cache of this repository (triton_doctor.cache.RepositoryCache) and what
    #: identifies the models read in it, when every one could be fingerprinted: the key of
    #: the judged Result. Never saved.
    cache: Any = field(default=None, repr=False, compare=False, metadata={"transient": True})
    fingerprint: str | None = field(default=None, compare=False, metadata={"transient": True})

    @classmethod
    def deferred(cls, path: str, read: Callable[[], list[ModelDir]], cache: Any,
                 fingerprint: str) -> RepositoryEvidence:
        """A repository whose every model the cache holds: ``read`` runs the first time
        ``models`` is asked for, so a run whose judged Result is cached too, and whose report
        names no model file, never decodes them."""
        repository = cls(path, cache=cache, fingerprint=fingerprint)
        del repository.models
        repository.__dict__["_read_models"] = read
        return repository

    def __getattr__(self, name: str) -> Any:
        read = self.__dict__.get("_read_models") if name == "models" else None
        if read is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.models = read()  # kept for another try should this raise
        del self.__dict__["_read_models"]
        return self.models

    def __getstate__(self) -> dict[str, Any]:
        """Copies and pickles hold the models themselves, not the means to read them."""
        self.models  # noqa: B018 (reads deferred models)
        return self.__dict__

    @property
    def has_models(self) -> bool:
        """Whether the repository holds a model directory (deferred models count unread)."""
        return "_read_models" in self.__dict__ or bool(self.models)


@record
class CheckOptions:
    """How the target server runs, as far as static checks care."""

    #: Mirrors tritonserver --disable-auto-complete-config.
    disable_auto_complete_config: bool = False
    #: The target release, as given (--triton-version); "" means the newest known.
    triton_version: str = ""
    #: Compute capability of the target GPU ("8.0"); "" when not given.
    gpu_compute_capability: str = ""
    #: GPUs the target server can use (``--gpus``, 0: CPU-only), for its instance groups;
    #: None when unknown, and then no rule claims what that machine refuses.
    gpus: int | None = None
    #: Backends installed in the target image beyond the release's own (settings).
    extra_backends: list[str] = field(default_factory=list)
    #: Repository agents installed in the target image beyond the release's own (settings).
    extra_repo_agents: list[str] = field(default_factory=list)
    #: Live-rule thresholds that differ from the defaults (settings ``[thresholds]``).
    thresholds: dict[str, float] = field(default_factory=dict)
    #: ``--configs-only``: a checkout of configurations alone (model files kept elsewhere, as
    #: in git with LFS or a model store): layout and configs are judged, absent files are not.
    configs_only: bool = False


@record
class Evidence:
    repository: RepositoryEvidence | None = None
    options: CheckOptions = field(default_factory=CheckOptions)
    server: ServerEvidence | None = None
    metrics: MetricsEvidence | None = None
    gpu: GpuEvidence | None = None
    container: ContainerEvidence | None = None
    host: HostEvidence | None = None
    log: LogEvidence | None = None
    fleet: FleetEvidence | None = None
    #: Parts that were asked for but could not be collected: part name -> why.
    unavailable: dict[str, str] = field(default_factory=dict)
    #: Of those, the sources the user named (the server, a --metrics-url, a --log beside a
    #: server) that could not be read: the run reports what it has and exits 3.
    unreachable: dict[str, str] = field(default_factory=dict)
    schema: int = EVIDENCE_SCHEMA


def to_jsonable(value: Any) -> Any:
    """Evidence as plain JSON data (transient caches left out)."""
    kind: Any = type(value)
    if kind in _SCALARS:
        return value
    if isinstance(value, list):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: to_jsonable(item) for key, item in value.items()}
    if records.is_record(value) and not isinstance(value, type):
        return {name: to_jsonable(getattr(value, name)) for name in _saved_fields(kind)}
    return value


#: Values written as they are: most of the Evidence's leaves.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def json_text(value: Any) -> str:
    """``json.dumps(to_jsonable(value))``, compact: the encoder walks the lists, dicts and
    leaves itself (in C) and asks only for each record's fields, a fifth less time than a walk
    in Python first."""
    return _json_encoder().encode(value)


@functools.cache
def _json_encoder() -> Any:
    """One encoder for every ``json_text`` (``json.dumps`` with options makes one a call). It
    does not look for cycles, a fifth of its time: Evidence is a tree, as it is read from a
    repository, a server or a snapshot's JSON."""
    import json

    return json.JSONEncoder(default=_record_fields, separators=(",", ":"),
                            check_circular=False)


def _record_fields(value: Any) -> dict[str, Any]:
    """A record's saved fields, in order: its own ``__dict__`` where that holds exactly those
    (a record without transient fields, as ``__init__`` made it), else a dict made of them."""
    saved = _instance_fields(value.__class__)
    if saved is None:
        raise TypeError(f"{type(value).__name__} is not JSON data")
    own: dict[str, Any] | None = getattr(value, "__dict__", None)
    if own is not None and tuple(own) == saved:
        return own
    return {name: getattr(value, name) for name in saved}


@functools.cache
def _instance_fields(kind: type) -> tuple[str, ...] | None:
    """The saved fields of an instance of ``kind``; None when it is no record (a record class
    itself is an instance of ``type``, no record): asked once per type, not per value."""
    return _saved_fields(kind) if hasattr(kind, "__record_fields__") else None


@functools.cache
def _saved_fields(cls: Any) -> tuple[str, ...]:
    return tuple(f.name for f in records.fields(cls) if not f.metadata.get("transient"))


def from_jsonable(cls: Any, data: Any, path: str = "evidence") -> Any:
    """Rebuild a tree of records written by ``to_jsonable``, driven by the type hints.

    A snapshot (or a cache entry) is untrusted input: every value's type is checked on the way
    in, so that a wrong one is an EvidenceError naming its field
    (``evidence.server.models[0].name``), not a traceback later in whatever reads it. The
    decoder of each type is built once from its hints, and a field's path is spelt only for
    the error: a cached repository of 1,000 models decodes in tens of milliseconds."""
    try:
        return _decoder(cls)(data)
    except _Misfit as misfit:
        raise EvidenceError(path + "".join(reversed(misfit.steps)), misfit.problem) from None


class _Misfit(Exception):
    """A value without its field's shape; ``steps`` lead to it, innermost first."""

    def __init__(self, problem: str, step: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps = [step] if step else []


Decoder = typing.Callable[[Any], Any]


@functools.cache
def _decoder(cls: Any) -> Decoder:
    origin = typing.get_origin(cls)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(cls) if arg is not type(None)]
        return _optional(options[0])
    if origin is list:
        return _list_of(typing.get_args(cls)[0])
    if origin is dict:
        return _dict_of(typing.get_args(cls)[1])
    if records.is_record(cls):
        return _record(cls)
    if isinstance(cls, type) and issubclass(cls, enum.IntEnum):
        return functools.partial(_member, cls)
    return functools.partial(_leaf, cls)


def _member(cls: type[enum.IntEnum], data: Any) -> enum.IntEnum:
    try:
        return cls(_expect(int, data))
    except ValueError:
        raise _Misfit(f"must be one of {', '.join(str(int(m)) for m in cls)}, not {data}") from None


def _optional(cls: Any) -> Decoder:
    def decode(data: Any) -> Any:
        return None if data is None else _decoder(cls)(data)

    return decode


def _list_of(cls: Any) -> Decoder:
    def decode(data: Any) -> list[Any]:
        items = _expect(list, data)
        if cls is str and all(isinstance(value, str) for value in items):
            return list(items)  # names and paths: most of a repository's evidence
        item = _decoder(cls)
        try:
            return [item(value) for value in items]
        except _Misfit as misfit:
            index = next(i for i, value in enumerate(items) if _misfits(item, value))
            misfit.steps.append(f"[{index}]")
            raise

    return decode


def _dict_of(cls: Any) -> Decoder:
    def decode(data: Any) -> dict[str, Any]:
        item = _decoder(cls)
        decoded = {}
        for key, value in _expect(dict, data).items():
            if not isinstance(key, str):
                raise _Misfit(f"keys must be strings, not {_json_kind(key)}")
            try:
                decoded[key] = item(value)
            except _Misfit as misfit:
                misfit.steps.append(f".{key}")
                raise
        return decoded

    return decode


def _record(cls: Any) -> Decoder:
    fields: list[tuple[str, Decoder, bool]] = []

    def decode(data: Any) -> Any:
        if not fields:  # resolved on first use: a type may name itself, or one not yet defined
            hints = _type_hints(cls)
            fields.extend(
                (f.name, _decoder(hints[f.name]),
                 f.default is records.MISSING and f.default_factory is records.MISSING)
                for f in records.fields(cls) if not f.metadata.get("transient"))
        data = _expect(dict, data)
        kwargs = {}
        for name, decode_field, required in fields:
            if name in data:
                try:
                    kwargs[name] = decode_field(data[name])
                except _Misfit as misfit:
                    misfit.steps.append(f".{name}")
                    raise
            elif required:
                raise _Misfit("missing", f".{name}")
        return cls(**kwargs)

    return decode


def _misfits(decode: Decoder, value: Any) -> bool:
    try:
        decode(value)
    except _Misfit:
        return True
    return False


def _leaf(cls: Any, data: Any) -> Any:
    if cls is Any:
        if too_deep(data):
            raise _Misfit(f"nested deeper than {MAX_JSON_DEPTH} levels")
        return data
    if cls is float:
        number = _expect(float, data)
        if not math.isfinite(number):
            raise _Misfit(f"must be a finite number, not {number}")
        return number
    value = _expect(cls, data)
    if cls is int and not INT64_MIN <= value <= UINT64_MAX:
        raise _Misfit(f"must be an integer within 64 bits, not {value}")
    return value


def _expect(cls: Any, data: Any) -> Any:
    """``data`` when JSON gave the type ``cls`` needs (an int for a float too), else the error."""
    if cls is bool or not isinstance(data, bool):  # JSON's true is no number
        if cls is float and isinstance(data, int) and INT64_MIN <= data <= UINT64_MAX:
            return float(data)
        if isinstance(data, cls):
            return data
    raise _Misfit(f"must be {_JSON_KINDS.get(cls, cls.__name__)}, not {_json_kind(data)}")


_JSON_KINDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               list: "an array", dict: "an object"}


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {int: "an integer", float: "a number"}.get(type(value)) or _JSON_KINDS.get(
        type(value), type(value).__name__)


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests lists and dicts more than ``limit`` levels deep. Iterative: a
    check against running out of stack must not run out of stack itself."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return False
