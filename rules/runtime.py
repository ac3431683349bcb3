"""TD505-TD507: the libraries the server looks up for a model in the target image: the
backend's `runtime`, a Python-based backend's model.py, the repository agents.

The lookup follows core's ``TritonModel::GetBackendLibraryProperties``: a runtime is searched
in the version directory, the model directory, then ``<backends>/<backend>/`` (see
docs/profiles-sources.md for what the images ship). Only what the image cannot hold is
judged: a backend directory the release lacks, or the Python backend's, whose files are known.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from triton_doctor.findings import Hit
from triton_doctor.registry import rule
from triton_doctor.rules._common import is_ensemble, names_text
from triton_doctor.rules.compatibility import OPTIONAL_BACKENDS
from triton_doctor.rules.layout import is_stray
from triton_doctor.triton import profiles
from triton_doctor.triton.repository_model import ModelView, RepositoryView

#: What ``runtime: "model.py"`` means: a backend written in Python, run by the Python backend.
PYTHON_RUNTIME = "model.py"
#: Files of ``<backends>/python/`` in every image (python_backend's CMake install rules).
PYTHON_BACKEND_FILES = frozenset({
    "libtriton_python.so", "triton_python_backend_stub", "triton_python_backend_utils.py",
})


def _backend_dir(model: ModelView, repository: RepositoryView) -> frozenset[str] | None:
    """The files of ``<backends>/<backend>/`` in the target image when they are known (none
    when the image has no such directory); None when it may hold anything."""
    backend = model.effective.backend
    if backend in model.options.extra_backends:
        return None
    if backend == "python":
        return PYTHON_BACKEND_FILES
    if backend in repository.release.backends or backend in OPTIONAL_BACKENDS:
        return None
    return frozenset()


def _absent_backend(model: ModelView, repository: RepositoryView) -> str:
    """Why the backend's directory cannot hold the library, in words."""
    backend = model.effective.backend
    if backend == "python":
        return (f"{profiles.BACKENDS_DIR}/python/ holds only "
                + ", ".join(sorted(PYTHON_BACKEND_FILES)))
    return (f"backend '{backend}' is not in {repository.release.label}, so it has no "
            f"{profiles.BACKENDS_DIR}/{backend}/")


def _judged(model: ModelView) -> bool:
    config = model.effective
    return bool(config.backend and config.runtime and not is_ensemble(config)
                and not is_stray(model) and model.dir.tree_stopped_after is None)


@rule("TD505", "runtime-not-found", "error", "runtime library found nowhere the server looks",
      server_says=("unable to find backend library '",), when=("runtime",))
def runtime_not_found(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: the library named by `runtime` is in a place the server searches for it:
    the version directory, the model directory, or the backend's directory of the target
    image (`/opt/tritonserver/backends/<backend>/`). That last one is only judged where its
    contents are known: the Python backend's, or a backend the release does not ship.
    Backends installed into the image by hand can be declared in settings:
    `backends = ["mybackend"]`.

    Why it matters: the version fails to load ("unable to find backend library
    'libtriton_custom.so' for model 'm', searched: ...").

    Example: `backend: "custom"` with `runtime: "libtriton_custom.so"` and the library left
    out of the image → copy it into the model directory.

    Fix: put the library in the model directory (or the version directory), or install the
    backend into the image under /opt/tritonserver/backends/<backend>/.
    """
    runtime = model.effective.runtime
    if not _judged(model) or runtime == PYTHON_RUNTIME:
        return
    tree = set(model.dir.tree)
    relative = runtime.lstrip("/")  # the server joins even an absolute name to each directory
    if posixpath.normpath(relative) in tree:
        return  # in the model directory; TD113 judges whether it stays inside
    in_image = _backend_dir(model, repository)
    escapes = posixpath.normpath(relative).startswith("../")
    if in_image is None and not escapes:
        return
    if not escapes and in_image is not None and relative in in_image:
        return
    why = ("it leads out of the backend's directory" if escapes
           else _absent_backend(model, repository))
    # Core joins the version as a signed number: <model>/-1, not the backends' unsigned name.
    missing = [str(number) for number in model.loaded_versions
               if posixpath.normpath(posixpath.join(str(number), relative)) not in tree]
    if not missing:
        return
    # Each version fails alike: one finding for the model, in the words of its first version.
    config, path = model.effective, model.dir.path
    searched = [f"{path}/{missing[0]}", path, f"{profiles.BACKENDS_DIR}/{config.backend}"]
    yield Hit(
        message=f"runtime '{runtime}' is in neither the version directory "
        f"({names_text([f'{v}/' for v in missing])}) nor the model directory, and {why}",
        triton_message=f"unable to find backend library '{runtime}' for model '{config.name}', "
        "searched: " + "".join(f"'{place}' " for place in searched),
        fix=_runtime_fix(config.backend),
        field="runtime",
        version=missing[0],
    )


def _runtime_fix(backend: str) -> str:
    if backend == "python":
        return ("Delete the runtime line (the Python backend's library is libtriton_python.so), "
                "or copy the library into the model directory.")
    return ("Copy the library into the model directory and give its bare file name, or install "
            "the backend into the image (and declare it in settings: backends = [...]).")


@rule("TD506", "python-runtime-missing", "error",
      "runtime model.py for a backend with no model.py in the image",
      server_says=("unable to find Python backend based backend library",), when=("runtime",))
def python_runtime_missing(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: `runtime: "model.py"` marks a Python-based backend (vLLM's, for one),
    whose model.py the server takes from `/opt/tritonserver/backends/<backend>/`, never from
    the model. With `backend: "python"` or a backend the target release does not ship,
    there is none.

    Why it matters: the version fails to load ("unable to find Python backend based
    backend library 'model.py' for model 'm', searched:
    '/opt/tritonserver/backends/python/model.py'"). The model's own `1/model.py` is not
    what `runtime` names: the Python backend finds it without a runtime.

    Example: `backend: "python"` with `runtime: "model.py"` → delete the runtime line.

    Fix: delete the runtime line of a Python model; for a Python-based backend, install it
    as /opt/tritonserver/backends/<backend>/model.py (and declare it in settings:
    `backends = [...]`).
    """
    if not _judged(model) or model.effective.runtime != PYTHON_RUNTIME:
        return
    if _backend_dir(model, repository) is None or not model.loaded_versions:
        return  # PYTHON_BACKEND_FILES has no model.py; a directory of unknown files may
    backend = model.effective.backend
    python = backend == "python"
    yield Hit(
        message=f"runtime 'model.py' asks for {profiles.BACKENDS_DIR}/{backend}/model.py, and "
        + (f"{profiles.BACKENDS_DIR}/python/ has none: the model's own model.py needs no runtime"
           if python else _absent_backend(model, repository)),
        triton_message="unable to find Python backend based backend library 'model.py' for "
        f"model '{model.effective.name}', searched: '{profiles.BACKENDS_DIR}/{backend}/model.py'",
        fix="Delete the runtime line: the Python backend loads <version>/model.py by itself."
        if python else f"Install the backend as {profiles.BACKENDS_DIR}/{backend}/model.py and "
        "declare it in settings (backends = [...]), or use backend: \"python\" without a "
        "runtime.",
        field="runtime",
    )


@rule("TD507", "repo-agent-missing", "error", "Repository agent the target image does not have",
      server_says=("for repo agent '",), when=("repo_agents",))
def repo_agent_missing(model: ModelView, repository: RepositoryView) -> Iterator[Hit]:
    """
    What it checks: each agent of `model_repository_agents` is one the target release's
    image ships in /opt/tritonserver/repoagents (the full image has "checksum" only).

    Why it matters: the server cannot poll the model ("unable to find
    'libtritonrepoagent_decrypt.so' for repo agent 'decrypt', searched:
    /opt/tritonserver/repoagents"), so it never loads; at startup that fails the server.

    Example: `agents [ { name: "checksums" } ]` → `name: "checksum"`.

    Fix: correct the agent's name, or install the agent as
    /opt/tritonserver/repoagents/<name>/libtritonrepoagent_<name>.so and declare it in
    settings: `repo-agents = ["<name>"]`.
    """
    shipped = profiles.repo_agents(repository.release)
    for index, agent in enumerate(model.raw.model_repository_agents.agents):
        if agent.name in shipped or agent.name in model.options.extra_repo_agents:
            continue
        library = f"libtritonrepoagent_{agent.name}.so"
        yield Hit(
            message=f"repository agent '{agent.name}' is not one {repository.release.label} "
            f"ships; it has {', '.join(sorted(shipped)) or 'none'}",
            triton_message=f"unable to find '{library}' for repo agent '{agent.name}', "
            f"searched: {profiles.REPO_AGENT_DIR}",
            fix=f"Correct the name, or install the agent as {profiles.REPO_AGENT_DIR}/"
            f"{agent.name}/{library} and declare it in settings: "
            f"repo-agents = [\"{agent.name}\"].",
            field=f"model_repository_agents.agents[{index}].name",
        )
