#!/usr/bin/env bash
# Install everything the tests need into .venv (the real tritonserver included) and run the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
# Only the wheel's server binary and Python backend are used; its own dependencies (grpc,
# gevent, typer, ...) are not needed, and pulling them would replace numpy 1.x.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps nvidia-pytriton==0.7.0
.venv/bin/ruff check doctor checks rules tests scripts bench
.venv/bin/mypy
exec .venv/bin/python -m pytest -q "$@"
