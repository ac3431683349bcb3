"""Every way a check can read a repository, run in one process (``python -m tests.cache_modes
CACHE_DIR FORMATS REPO...``, FORMATS such as ``json,text``): with no cache in one process, in
two, with the cache as it is first written (by one process, or two), and from it. Prints, as
JSON, each repository's reports and exit codes by mode, and how many model directories each
mode read from disk.

A subprocess of its own: forking is refused in a process with threads, as pytest's may have.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from triton_doctor import cli
from triton_doctor.checks import model_dir

#: Each mode's flags, and the cache it writes or reads (modes sharing one run in this order).
MODES = {
    "one process": (["--no-cache", "--jobs", "1"], ""),
    "two processes": (["--no-cache", "--jobs", "2"], ""),
    "cache written": (["--jobs", "1"], "one"),
    "cache read": (["--jobs", "1"], "one"),
    "cache written by two processes": (["--jobs", "2"], "two"),
    "cache read, written by two": (["--jobs", "1"], "two"),
}


def main(cache_dir: str, formats: list[str], repositories: list[str]) -> dict[str, object]:
    original = model_dir.collect_model
    read = [0]

    def counted(*args: object, **kwargs: object) -> object:
        model = original(*args, **kwargs)  # type: ignore[arg-type]
        read[0] += model is not None
        return model

    model_dir.collect_model = counted  # type: ignore[assignment]
    runs: dict[str, object] = {}
    for path in repositories:
        for form in formats:
            for mode, (flags, cache) in MODES.items():
                read[0] = 0
                out = io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                    code = cli.main(["check", "--format", form, "--cache-dir",
                                     f"{cache_dir}/{form}-{cache}", *flags, path])
                runs[f"{path}|{form}|{mode}"] = {"report": out.getvalue(), "code": code,
                                                  "read": read[0]}
    return runs


if __name__ == "__main__":
    json.dump(main(sys.argv[1], sys.argv[2].split(","), sys.argv[3:]), sys.stdout)
