"""Seeded generation of repositories for the differential fuzzer.

The same ``(seed, index)`` always gives the same repository, so a disagreement found in a
long run is reproduced by its number alone (``bench/differential_fuzz.py --only N``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tests.differential.fuzz_mutations import mutate
from tests.differential.fuzz_spec import base_repository, files_of

__all__ = ["GeneratedRepository", "generate"]


@dataclass(frozen=True)
class GeneratedRepository:
    """A finished repository: files relative to its root, its model names, its mutations."""

    index: int
    prefix: str
    files: dict[str, str]
    models: tuple[str, ...]
    mutations: tuple[str, ...]


def generate(seed: int, index: int) -> GeneratedRepository:
    """Repository ``index`` of the run seeded ``seed``: a base, then its mutations."""
    rng = random.Random(f"{seed}:{index}")
    prefix = f"f{seed}n{index:04d}"
    spec = base_repository(rng, prefix)
    mutate(rng, spec)
    models = tuple(m.name for m in spec.models)
    return GeneratedRepository(index, prefix, files_of(spec), models, tuple(spec.mutations))

