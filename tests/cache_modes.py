"""Every way a check can read a repository, run in one process (``python -m tests.cache_modes
CACHE_DIR FORMATS REPO...``, FORMATS such as ``json,text``): with no cache in one process, in
two, with the cache as it is first written (by one process, or two), and from it. Prints, as
JSON, each repository's reports and exit codes by mode, and how many model directories each
mode read from disk, in all its processes (each read is a byte appended to a file they share).

A subprocess of its own: forking is refused in a process with threads, as pytest's may have.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
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
    tally = os.open(os.path.join(cache_dir, "reads"), os.O_RDWR | os.O_CREAT | os.O_APPEND)

    def counted(*args: object, **kwargs: object) -> object:
        model = original(*args, **kwargs)  # type: ignore[arg-type]
        if model is not None:
            os.write(tally, b".")  # O_APPEND: a forked child's bytes add to this one's
        return model

    model_dir.collect_model = counted  # type: ignore[assignment]
    runs: dict[str, object] = {}
    for path in repositories:
        for form in formats:
            for mode, (flags, cache) in MODES.items():
                os.ftruncate(tally, 0)
                out = io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                    code = cli.main(["check", "--format", form, "--cache-dir",
                                     f"{cache_dir}/{form}-{cache}", *flags, path])
                runs[f"{path}|{form}|{mode}"] = {"report": out.getvalue(), "code": code,
                                                  "read": os.fstat(tally).st_size}
    return runs


if __name__ == "__main__":
    json.dump(main(sys.argv[1], sys.argv[2].split(","), sys.argv[3:]), sys.stdout)
