#!/usr/bin/env bash
# Install everything the tests need into .venv (the real tritonserver included), Prometheus and
# Alertmanager from Debian's packages, and run the suite. The exporter's ten-minute soak test is
# a suite of its own, run on a quiet machine: `.venv/bin/python -m pytest -m soak -s`.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v promtool >/dev/null || missing+=(prometheus)
command -v prometheus-alertmanager >/dev/null || missing+=(prometheus-alertmanager)
command -v curl >/dev/null || missing+=(curl)  # times the soak test's scrapes
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
# Only the wheel's server binary and Python backend are used; its own dependencies (grpc,
# gevent, typer, ...) are not needed, and pulling them would replace numpy 1.x.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps nvidia-pytriton==0.7.0
.venv/bin/ruff check doctor checks rules tests scripts bench
.venv/bin/mypy
exec .venv/bin/python -m pytest -q "$@"
