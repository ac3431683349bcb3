"""Find the Git LFS pointers among the files below a model directory.

A model stored as a directory (a TensorFlow SavedModel, ONNX with external data, OpenVINO's
.xml beside its .bin, a Python model's weights and tokenizer) is read by its backend file by
file, so one pointer left by a clone without ``git lfs pull`` fails the load as surely as a
pointer in place of model.onnx. Only small files are opened: a pointer is under 1024 bytes
(the pointer format requires it), so a weight file costs one ``stat`` and is never read.
"""

from __future__ import annotations

import os

from triton_doctor.checks.formats import sniff
from triton_doctor.printable import display_name

#: Git LFS pointer files are smaller than this.
MAX_POINTER_BYTES = 1024


def find_pointers(model_path: str, tree: list[str],
                  heads: sniff.Heads | None = None) -> dict[str, str]:
    """Pointer files among ``tree`` (paths relative to ``model_path``, as the repository walk
    lists them, already bounded in depth and count): shown path -> the size the pointer
    records ("" when it records none). Links are followed: a link to a pointer is one. A file
    in ``heads`` was read already: what was read is looked at."""
    found: dict[str, str] = {}
    for relative in tree:
        if relative.endswith("/") or _is_config(relative):
            continue
        path = os.path.join(model_path, relative)
        known = heads.get(path) if heads else None
        try:
            size = known[1] if known else os.stat(path).st_size
            if not 0 < size < MAX_POINTER_BYTES:
                continue
            head, size = known or sniff.read_head(path)
        except OSError:
            continue  # gone, unreadable or not a regular file: not a pointer to report
        if sniff.sniff_bytes(head, size) == "lfs-pointer":
            found[display_name(relative)] = sniff.describe_lfs_pointer(head)
    return found


def _is_config(relative: str) -> bool:
    """config.pbtxt and configs/*.pbtxt: read whole by the repository collector already, and a
    pointer in their place is a config that does not parse (TD201)."""
    return relative == "config.pbtxt" or (relative.startswith("configs/")
                                          and relative.endswith(".pbtxt"))
