"""Rates derived from two samples of the server's statistics."""

from __future__ import annotations

from triton_doctor.triton.server_model import ModelRates


def rates(inferences: int, executions: int, batches: dict[int, int]) -> ModelRates:
    return ModelRates(model="m", version="1", window_s=5.0, requests=inferences, failures=0,
                      inferences=inferences, executions=executions, queue_ns=0, request_ns=0,
                      compute_ns=0, batch_executions=batches)


def test_average_batch_comes_from_the_batch_statistics() -> None:
    # tritonserver 2.51 counts a failed execution but not its inferences: 3 of 4 requests
    # succeeded, all four ran alone.
    assert rates(inferences=3, executions=4, batches={1: 4}).average_batch == 1.0
    assert rates(inferences=10, executions=4, batches={2: 2, 3: 2}).average_batch == 2.5


def test_average_batch_without_batch_statistics() -> None:
    assert rates(inferences=12, executions=4, batches={}).average_batch == 3.0
    assert rates(inferences=0, executions=0, batches={}).average_batch is None
