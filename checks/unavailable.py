"""The one error every live collector raises: a source that cannot be read, and why."""

from __future__ import annotations


class SourceUnavailable(Exception):
    """A live source (server, metrics endpoint, NVML, Docker, /dev/shm, a log file) could not be
    read. The message names the source (URL, endpoint, path) and what to do, for the user."""
