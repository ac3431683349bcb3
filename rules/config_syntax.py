"""TD2xx: config.pbtxt that the server cannot read or parse."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from triton_doctor.findings import Hit, Severity
from triton_doctor.registry import rule
from triton_doctor.triton import profiles
from triton_doctor.triton.repository_model import ModelView, RepositoryView, per_model

WIRE_TYPES = {
    "BOOL": "TYPE_BOOL",
    "UINT8": "TYPE_UINT8",
    "UINT16": "TYPE_UINT16",
    "UINT32": "TYPE_UINT32",
    "UINT64": "TYPE_UINT64",
    "INT8": "TYPE_INT8",
    "INT16": "TYPE_INT16",
    "INT32": "TYPE_INT32",
    "INT64": "TYPE_INT64",
    "FP16": "TYPE_FP16",
    "FP32": "TYPE_FP32",
    "FP64": "TYPE_FP64",
    "BYTES": "TYPE_STRING",
    "BF16": "TYPE_BF16",
    "STRING": "TYPE_STRING",
}
_COMMENT = re.compile(r"#[^\n]*")
#: ``${var}`` anywhere (envsubst, fill_template.py); ``{{ var }}`` only outside strings, since
#: string values legitimately hold Jinja (chat templates).
# Each pattern stops where the next one could start, and a string missing its closing quote
# runs to the end of its line: otherwise a long line of `{` or of `\"` is scanned again from
# every position, quadratic in its length.
_DOLLAR_TEMPLATE = re.compile(r"\$\{[^{}\n]*\}?")
_BRACE_TEMPLATE = re.compile(r"\{\{[^{}\n]*\}\}")
_STRING = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?|\'[^\'\\\n]*(?:\\.[^\'\\\n]*)*\'?')
_WIRE_DTYPE = re.compile(r"\bdata_type\s*:\s*(" + "|".join(WIRE_TYPES) + r")\b")
#: _WIRE_DTYPE less its leading \b, which keeps the regex engine from searching for the
#: literal "data_type": it matches wherever _WIRE_DTYPE does, some fifteen times faster.
_MAY_HOLD_WIRE_DTYPE = re.compile(_WIRE_DTYPE.pattern.removeprefix(r"\b"))


def _code_lines(text: str) -> list[tuple[int, str]]:
    return [(number, _COMMENT.sub("", line)) for number, line in enumerate(text.splitlines(), 1)]


def _read_failure(model: ModelView) -> str:
    return f"failed to read text proto from {model.config_path}"


@per_model
def templates(model: ModelView) -> list[tuple[int, str, bool]]:
    """(line, placeholder, inside a string value) for every template placeholder. Most configs
    hold neither opening, and taking out comments and strings only shortens a line, so those
    are not scanned line by line."""
    text = model.dir.config.text or ""
    found: list[tuple[int, str, bool]] = []
    if "${" not in text and "{{" not in text:
        return found
    for number, line in _code_lines(text):
        strings = [match.span() for match in _STRING.finditer(line)]
        starts = [start for start, _ in strings]
        for match in _DOLLAR_TEMPLATE.finditer(line):
            index = bisect.bisect_right(starts, match.start()) - 1
            quoted = index >= 0 and match.start() < strings[index][1]
            found.append((number, match.group(), quoted))
        outside_strings = _STRING.sub('""', line)
        found += [(number, m.group(), False) for m in _BRACE_TEMPLATE.finditer(outside_strings)]
    return found


#: String parameters that models read as paths, so that an unrendered value fails the load:
#: TensorRT-LLM's backend opens gpt_model_path and encoder_model_path, and gives up only when
#: neither exists. Its Python models subscript tokenizer_dir (pre/post-processing) and
#: engine_dir (the gpt example's tensorrt_llm) at the top of initialize and open them (in
#: words of transformers', which vary by version); the rest they read in a branch (the
#: preprocessing model's gpt_model_path, for multimodal models only) or through a helper that
#: makes "${...}" None (the Python tensorrt_llm model's tokenizer_dir). So a Python model's
#: parameter is judged only where model.py certainly reads it so.
TRTLLM_MODEL_PATHS = ("gpt_model_path", "encoder_model_path")
PYTHON_PATH_PARAMETERS = ("tokenizer_dir", "engine_dir")
TRTLLM_NO_PATH = "Both encoder and decoder model paths are empty"


def _unrendered(value: str) -> bool:
    return bool(_DOLLAR_TEMPLATE.search(value))


def _line_of(model: ModelView, value: str) -> int | None:
    """The line of the first placeholder of ``value`` inside a string."""
    return next((line for line, placeholder, quoted in templates(model)
                 if quoted and placeholder in value), None)


def _path_templates(model: ModelView, repository: RepositoryView) -> Iterator[tuple[str, Hit]]:
    """(placeholder, finding) for each unrendered parameter the model reads as a path."""
    if model.state != "parsed":
        return
    config = model.effective
    if config.backend not in ("tensorrtllm", "python"):
        return
    values = {key: value.string_value for key, value in config.parameters.items()}
    if config.backend == "tensorrtllm":
        given = [key for key in TRTLLM_MODEL_PATHS if key in values]
        if given and all(_unrendered(values[key]) for key in given):
            key = given[0]
            shown = ", ".join(values[k] for k in given)
            checked = repository.release.container >= profiles.TRTLLM_BOTH_PATHS_CHECKED_FROM
            yield " ".join(values[k] for k in given), Hit(
                message=f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} left "
                f"unrendered ({shown}): the TensorRT-LLM backend finds no engine directory "
                "and the model fails to load",
                triton_message=TRTLLM_NO_PATH if checked else None,
                fix=f"Render the engine directory: `fill_template.py -i config.pbtxt "
                f"engine_dir:/engines/<model>` (parameter {key}).",
                field="parameters",
                line=_line_of(model, values[key]),
            )
    elif config.backend == "python":
        source = model.python_source()
        reads = {read.name: read.line for read in source.initialize_reads
                 if read.kind == "parameter"} if source else {}
        for key in PYTHON_PATH_PARAMETERS:
            if key in reads and key in values and _unrendered(values[key]):
                yield values[key], Hit(
                    message=f"{key} is left unrendered ({values[key]}): initialize reads it "
                    f"(model.py line {reads[key]}) as a path, as TensorRT-LLM's Python models "
                    "do, and fails on it",
                    fix=f"Render it: `fill_template.py -i config.pbtxt {key}:<path>`.",
                    severity=Severity.WARNING,
                    field="parameters",
                    line=_line_of(model, values[key]),
                )


@per_model
def wire_dtypes(model: ModelView) -> list[tuple[int, str]]:
    """(line, wire name) of each data_type written with one, outside comments. Taking out a
    comment only cuts a line's end, so a text with no match at all has none line by line."""
    text = model.dir.config.text or ""
    if not _MAY_HOLD_WIRE_DTYPE.search(text):
        return []
    return [(n, m.group(1)) for n, line in _code_lines(text) for m in _WIRE_DTYPE.finditer(line)]


@rule("TD201", "config-syntax", "error", "config.pbtxt does not parse", needs=(),
      server_says=("failed to read text proto from",))
def config_syntax(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: that config.pbtxt parses as Triton's `inference.ModelConfig` text format
    (the same schema and parser family the server uses): known field names, valid enum
    values, balanced braces, commas between list elements.

    Why it matters: the server logs the libprotobuf error, then "failed to read text proto",
    and never loads the model; with the default --exit-on-error the whole server exits.

    Example: `max_batchsize: 8` → `max_batch_size: 8`; `data_type: TYPE_FLOAT32` →
    `data_type: TYPE_FP32`; `input [ { ... } { ... } ]` → `input [ { ... }, { ... } ]`.

    Fix: correct the text at the reported line and column; the field reference is
    https://github.com/triton-inference-server/common/blob/main/protobuf/model_config.proto
    """
    problem = model.dir.config.syntax_error
    if problem is None:
        return
    explained_by = {line for line, _, quoted in templates(model) if not quoted}
    explained_by |= {line for line, _ in wire_dtypes(model)}
    if problem.line in explained_by:
        return  # TD202 / TD203 say what is wrong there, with a better fix
    yield Hit(
        message=f"config.pbtxt does not parse as inference.ModelConfig: {problem.describe()}",
        triton_message=_read_failure(model),
        fix="Correct the text at that position; fields and enum values are those of "
        "inference.ModelConfig (model_config.proto).",
        line=problem.line,
        evidence={"line": problem.line, "column": problem.column},
    )


@rule(
    "TD202", "unrendered-template", "error", "Template placeholder left in config.pbtxt", needs=(),
    server_says=("failed to read text proto from", TRTLLM_NO_PATH),
)
def unrendered_template(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `${...}` placeholders, or `{{...}}` outside strings (string values may
    hold Jinja, e.g. chat templates), in non-comment text: the mark of a
    config template (TensorRT-LLM's fill_template.py, Helm, envsubst) that was never rendered.

    Why it matters: in a number or enum position the config no longer parses ("Expected
    integer, got: $"). Inside a string value the server accepts the literal text: that is
    reported once per model as info, since TensorRT-LLM's fill_template.py leaves the keys it
    was not given on purpose and its backends fall back to defaults. Parameters read as paths
    are the exception: the `tensorrtllm` backend with neither `gpt_model_path` nor
    `encoder_model_path` rendered fails to load (an error, in its words from container 24.07
    on), and a Python model whose initialize certainly reads `tokenizer_dir` or `engine_dir`
    (TensorRT-LLM's pre/post-processing models) fails there (a warning: the words are the
    tokenizer library's).

    Example: `max_batch_size: ${triton_max_batch_size}` → `max_batch_size: 64`.

    Fix: render the template (e.g. `python3 tools/fill_template.py -i config.pbtxt
    triton_max_batch_size:64`) before deploying, and check the rendered file.
    """
    problem = model.dir.config.syntax_error
    as_paths: set[str] = set()
    for value, hit in _path_templates(model, repository):
        as_paths.update(m.group() for m in _DOLLAR_TEMPLATE.finditer(value))
        yield hit
    in_strings: list[str] = []
    for line, placeholder, quoted in templates(model):
        if quoted:
            if placeholder not in as_paths:
                in_strings.append(placeholder)
            continue
        breaks_parse = problem is not None and problem.line == line
        yield Hit(
            message=f"unrendered template placeholder {placeholder} on line {line}"
            + (f": {problem.describe()}" if breaks_parse and problem else ""),
            triton_message=_read_failure(model) if breaks_parse else None,
            fix=f"Replace {placeholder} with its value, or run the template tool that "
            "should have rendered this file.",
            line=line,
        )
    if in_strings:
        names = sorted(set(in_strings))
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        yield Hit(
            message=f"{len(in_strings)} placeholder(s) left inside string values ({shown}): "
            "the server passes the literal text on",
            fix="Render the values you mean to set; TensorRT-LLM's fill_template.py leaves the "
            "keys it was not given, and its backends then use their defaults.",
            severity=Severity.INFO,
            line=next(line for line, placeholder, quoted in templates(model)
                      if quoted and placeholder not in as_paths),
        )


@rule("TD203", "wire-dtype-name", "error", "Wire datatype name used in data_type", needs=(),
      server_says=("failed to read text proto from",))
def wire_dtype_name(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `data_type` values written as wire names (`FP32`, `BYTES`), as found in
    `/v2/models/<m>` metadata or client code, instead of config enum names (`TYPE_FP32`).

    Why it matters: `FP32` is not an `inference.DataType` value, so the file does not parse
    and the model never loads. `BYTES` is `TYPE_STRING` in a config, not `TYPE_BYTES`.

    Example: `data_type: FP32` → `data_type: TYPE_FP32`; `data_type: BYTES` →
    `data_type: TYPE_STRING`.

    Fix: use the `TYPE_` names of model_config.proto; copy configs from
    `/v2/models/<m>/config`, not from the metadata endpoint.
    """
    for line, wire in wire_dtypes(model):
        yield Hit(
            message=f"data_type {wire} on line {line} is a wire (KServe) datatype name, "
            f"not a config enum value",
            triton_message=_read_failure(model),
            fix=f"Write data_type: {WIRE_TYPES[wire]}",
            line=line,
        )


@rule("TD204", "config-unreadable", "error", "config.pbtxt cannot be read", needs=(),
      server_says=("failed to read text proto from", "config.pbtxt: Permission denied"))
def config_unreadable(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: that config.pbtxt is a readable text file: not a directory, not binary,
    valid UTF-8, readable by the user running the check, and of a plausible size.

    Why it matters: binary or non-UTF-8 content fails to parse ("failed to read text
    proto"); a directory named config.pbtxt aborts tritonserver itself (std::length_error),
    even in explicit model-control mode; an unreadable file fails the model.

    Example: a weights file saved as config.pbtxt, or `mkdir config.pbtxt` by a deploy script
    → a text config.pbtxt.

    Fix: replace the file with the model's text-format configuration.
    """
    config = model.dir.config
    if not config.unreadable:
        return
    reason = config.unreadable
    if reason.startswith("is a directory"):
        yield Hit(
            message=f"{config.path} {reason}; tritonserver aborts (std::length_error) when it "
            "meets one, even in explicit model-control mode",
            fix="Remove the directory and write config.pbtxt as a text file.",
        )
    elif reason.startswith("is "):  # binary, not UTF-8, or far too large: it cannot parse
        yield Hit(
            message=f"{config.path} {reason}",
            triton_message=_read_failure(model) if "text" in reason else None,
            fix="Write config.pbtxt as UTF-8 text in protobuf text format (a few kilobytes).",
        )
    else:
        yield Hit(
            message=f"{config.path} cannot be read: {reason}",
            triton_message=f"failed to open text file for read {config.path}: Permission denied"
            if reason == "permission denied"
            else None,
            fix="Make config.pbtxt readable by the user the server runs as.",
        )
