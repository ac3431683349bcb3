#!/usr/bin/env bash
# Install everything the tests need into .venv (the real tritonserver included), Prometheus and
# Alertmanager from Debian's packages, and run the suite; with no arguments, the ten-minute
# soak test of the exporter runs beside it (its figures are printed at the end).
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
if [ $# -eq 0 ]; then
    soak_dir=$(mktemp -d)
    .venv/bin/python -m pytest -q -s -m soak --basetemp="$soak_dir/tmp" >"$soak_dir/log" 2>&1 &
    soak=$!
fi
status=0
# Beside the soak, the suite yields the CPU to it (nice): the soak times scrapes against the
# issue's 50 ms, which a starved exporter would miss for want of a core, not for its own cost.
${soak:+nice -n 10} .venv/bin/python -m pytest -q "$@" || status=$?
if [ -n "${soak:-}" ]; then
    soak_status=0
    wait "$soak" || soak_status=$?
    echo "--- the exporter's soak test, run beside the suite (exit $soak_status) ---"
    cat "$soak_dir/log"
    [ "$soak_status" -eq 0 ] || status=$soak_status
fi
exit "$status"
