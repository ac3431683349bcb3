"""The one error every live collector raises: a source that cannot be read, and why."""

from __future__ import annotations

import errno


class SourceUnavailable(Exception):
    """A live source (server, metrics endpoint, NVML, Docker, /dev/shm, a log file) could not be
    read. The message names the source (URL, endpoint, path) and what to do, for the user."""


def describe_os_error(error: OSError, missing: str = "no such file") -> str:
    """Why a path could not be read, in words; ``missing`` words ENOENT for the caller's case
    (a path listed a moment ago and gone is a dangling symbolic link)."""
    if error.errno == errno.ELOOP:
        return "symbolic link loop"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if error.errno == errno.ENOENT:
        return missing
    if error.errno == errno.EISDIR:
        return "a directory"
    return error.strerror or str(error)
