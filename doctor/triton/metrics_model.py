"""Arithmetic on scraped Prometheus samples for the rules: sums, deltas and quantiles.

Pure (no clock, no I/O): a replayed snapshot gives the same figures as the live run. Values
come from the last scrape; deltas compare the first and the last, series by series, so that
a counter that went back (a restart, a model reloaded) is reported as None rather than as a
negative or understated rate.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triton_doctor.live_evidence import MetricSample, MetricsEvidence, MetricsScrape

#: (model, version) as Triton labels its per-model samples.
ModelKey = tuple[str, str]
_SeriesKey = tuple[tuple[str, str], ...]


class _Index:
    """One scrape's samples by name, and by name and model, built once per name."""

    def __init__(self, scrape: MetricsScrape) -> None:
        self.by_name: dict[str, list[MetricSample]] = {}
        for sample in scrape.samples:
            self.by_name.setdefault(sample.name, []).append(sample)
        self._by_model: dict[str, dict[str, list[MetricSample]]] = {}
        self._series: dict[str, dict[_SeriesKey, float]] = {}

    def select(self, name: str, labels: dict[str, str]) -> list[MetricSample]:
        """Samples named ``name`` whose labels include ``labels``."""
        model = labels.get("model")
        if model is None:
            candidates = self.by_name.get(name, [])
        else:
            candidates = self.by_model(name).get(model, [])
        wanted = labels.items()
        return [sample for sample in candidates if wanted <= sample.labels.items()]

    def by_model(self, name: str) -> dict[str, list[MetricSample]]:
        found = self._by_model.get(name)
        if found is None:
            found = self._by_model[name] = {}
            for sample in self.by_name.get(name, []):
                model = sample.labels.get("model")
                if model is not None:
                    found.setdefault(model, []).append(sample)
        return found

    def series(self, name: str) -> dict[_SeriesKey, float]:
        """Value by full label set, to match a series across scrapes."""
        found = self._series.get(name)
        if found is None:
            found = self._series[name] = {
                _key(sample): sample.value for sample in self.by_name.get(name, [])
            }
        return found


def _key(sample: MetricSample) -> _SeriesKey:
    return tuple(sorted(sample.labels.items()))


def _model_key(sample: MetricSample) -> ModelKey:
    return sample.labels["model"], sample.labels.get("version", "")


class MetricsView:
    """The metrics part of the Evidence, indexed for the rules."""

    def __init__(self, evidence: MetricsEvidence) -> None:
        scrapes = evidence.scrapes
        self._first = _Index(scrapes[0]) if scrapes else None
        self._last = _Index(scrapes[-1]) if len(scrapes) >= 2 else self._first
        self._two_scrapes = len(scrapes) >= 2

    @cached_property
    def names(self) -> frozenset[str]:
        """Sample names in the last scrape (a family printed without samples is absent)."""
        return frozenset(self._last.by_name) if self._last else frozenset()

    def value(self, name: str, **labels: str) -> float | None:
        """Sum over the last scrape's samples matching ``labels``; None when none matches."""
        if self._last is None:
            return None
        matched = self._last.select(name, labels)
        return sum(sample.value for sample in matched) if matched else None

    def delta(self, name: str, **labels: str) -> float | None:
        """Increase of the matching series' sum from the first scrape to the last (for
        counters: a gauge that went down reads as a reset).

        None with fewer than two scrapes, without a matching sample, or when any matching
        series went down (a counter reset). A series new in the last scrape counts from 0:
        Triton creates a model's counters at 0 when it loads.
        """
        if not self._two_scrapes or self._first is None or self._last is None:
            return None
        matched = self._last.select(name, labels)
        if not matched:
            return None
        return _increase(matched, self._first.series(name))

    def per_model(self, name: str) -> dict[ModelKey, float]:
        """Last-scrape sums by (model, version), over the other labels (reason, gpu_uuid)."""
        totals: dict[ModelKey, float] = {}
        if self._last is None:
            return totals
        for model_samples in self._last.by_model(name).values():
            for sample in model_samples:
                key = _model_key(sample)
                totals[key] = totals.get(key, 0.0) + sample.value
        return totals

    def quantile(self, name: str, model: str, q: float, version: str | None = None,
                 ) -> float | None:
        """A summary's ``q`` quantile for ``model`` in the last scrape.

        None when absent, or NaN (no observation in the summary's window). Several matching
        series (versions, GPUs) cannot be combined into one quantile; the largest is returned,
        as the rules ask about the worst.
        """
        if self._last is None:
            return None
        found: list[float] = []
        for sample in self._last.by_model(name).get(model, []):
            text = sample.labels.get("quantile")
            if text is None or (version is not None and sample.labels.get("version") != version):
                continue
            try:
                level = float(text)
            except ValueError:
                continue
            if level == q and not math.isnan(sample.value):
                found.append(sample.value)
        return max(found) if found else None


def _increase(samples: list[MetricSample], before: dict[_SeriesKey, float]) -> float | None:
    total = 0.0
    for sample in samples:
        step = sample.value - before.get(_key(sample), 0.0)
        if step < 0:
            return None
        total += step
    return total
