# mypy reads the package under its installed name only through this stub (pyproject's
# ``mypy_path``): its modules live in doctor/, checks/ and rules/, mapped by the editable
# install, which mypy cannot follow. Every module but ``records`` stays untyped (Any) here.
from typing import Any

def __getattr__(name: str) -> Any: ...
