"""The parser a run builds (only the subcommand it names gets its arguments) says and refuses
exactly what the parser of every subcommand does."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest
from triton_doctor import cli


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = action.choices[name]
    return found


def _outcome(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[str, str, object]:
    """What parsing ``argv`` prints and ends with (the Namespace, or SystemExit's code)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ended: object = vars(parser.parse_args(argv))
        except SystemExit as stop:
            ended = stop.code
    return out.getvalue(), err.getvalue(), ended


@pytest.mark.parametrize("name", sorted(cli.SUBCOMMANDS))
def test_a_lazy_parser_shows_the_help_of_the_full_one(name: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    full, lazy = cli.build_parser(), cli.build_parser(cli._named([name, "--help"]))
    assert lazy.format_help() == full.format_help()
    assert lazy.format_usage() == full.format_usage()
    assert _subparser(lazy, name).format_help() == _subparser(full, name).format_help()
    assert _outcome(lazy, [name, "--help"]) == _outcome(full, [name, "--help"])


@pytest.mark.parametrize("argv", [
    [], ["--help"], ["--version"], ["chek"], ["-x", "check"], ["--", "rules"],
    ["check", "--formt", "json"], ["check", "--format", "jsn"], ["check", "--jobs", "0"],
    ["rules", "--format", "json"], ["explain"], ["config"], ["watch", "--interval", "0"],
    ["alerts", "--groups", "metrics"], ["exporter", "--listen", ":0"],
    ["snapshot", "-o", "out.json", "--url", "localhost:8000"],
], ids=" ".join)
def test_a_lazy_parser_parses_and_refuses_as_the_full_one(
        argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    full, lazy = cli.build_parser(), cli.build_parser(cli._named(argv))
    assert _outcome(lazy, argv) == _outcome(full, argv)


def test_only_the_subcommand_named_gets_its_arguments() -> None:
    lazy = cli.build_parser(cli._named(["check", "--color", "never", "repo"]))
    assert "--jobs" in _subparser(lazy, "check")._option_string_actions
    assert "--interval" not in _subparser(lazy, "watch")._option_string_actions
    assert cli._named(["--version"]) == cli._named(["chek"]) == ()


@pytest.mark.parametrize("columns", [None, "57", "0", "wide"])
def test_the_formatter_takes_the_width_argparse_would(columns: str | None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    ours, theirs = cli._Formatter("triton-doctor"), argparse.HelpFormatter("triton-doctor")
    assert (ours._width, ours._max_help_position) == (theirs._width,
                                                      theirs._max_help_position)
