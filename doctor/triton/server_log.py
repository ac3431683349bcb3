"""What a line of a tritonserver log says: its time, its message, the model it is about.

The server writes glog lines (``E1201 19:44:01.123456 77 model_lifecycle.cc:654] message``);
since 2.43 the message is quoted and escaped as a JSON string, so a traceback is one line.
The log reaches the user wrapped in the shape of whatever carried it: ``docker logs
--timestamps`` puts an RFC 3339 time in front, containerd (Kubernetes' node log files) a time,
the stream and a tag, and Docker's json-file driver (and log shippers) a JSON object per line.
Each shape is recognised per line, so a log pasted together from several of them reads too.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from triton_doctor.lazy_pattern import LazyPattern
from triton_doctor.records import record

if TYPE_CHECKING:
    from datetime import datetime

#: glog's prefix: severity, MMDD, time, thread, file:line, then "] ".
GLOG = LazyPattern(r"([IWEF])(\d{4}) (\d\d:\d\d:\d\d(?:\.\d+)?) +\d+ [^ \]]*\] ?")
#: An RFC 3339 time and a space, as ``docker logs --timestamps`` writes it.
RFC3339 = LazyPattern(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) ")
#: containerd's CRI log line: time, stream, F(ull) or P(artial), then the line.
CRI = LazyPattern(RFC3339.pattern + r"(?:stdout|stderr) [FP] ")
#: Keys log carriers put the line under, and its time.
MESSAGE_KEYS = ("log", "message", "msg")
TIME_KEYS = ("time", "timestamp", "@timestamp", "ts")
#: How a message names the model it is about, most specific first: (pattern, whether it
#: names a model instance, which stands for its model).
MODEL_NAMED = tuple((LazyPattern(pattern), instance) for pattern, instance in (
    (r"failed to load '([^']+)'", False),
    (r"model directory '([^']+)'", False),
    (r"in ensemble '([^']+)'", False),
    (r"Failed to process the request\(s\) for model '([^']+)'", True),
    (r"model instance '([^']+)'", True),
    (r"model '([^']+)'", False),
    (r"for '([^']+)'", False),
    (r"Stub process '([^']+)'", True),
    (r"exited unexpectedly: ?([\w.-]+)", True),
    (r"'([^']+)' version \d+", False),
    # A row of the model table the server prints at startup: | name | version | status |
    (r"^\|\s*([^|\s]+)\s*\|\s*\d+\s*\|", False),
))
#: A default instance group's instance: the model's name, the group's index, the instance's
#: (``name_0_0``; releases before 2.27 wrote ``name_0``).
INSTANCE_SUFFIX = LazyPattern(r"(?:_\d+){1,2}$")


@record(frozen=True)
class LogLine:
    #: The time the line carries, as written ("" when none): RFC 3339, or glog's "MMDD hh:mm:ss".
    time: str
    #: The server's message, unquoted; the whole line when it has no shape known here.
    message: str
    #: glog's severity letter (I, W, E, F); "" when the line has none.
    severity: str = ""


def read_line(line: str) -> LogLine:
    """The time, message and severity of one log line, whatever carried it."""
    time, text = "", line.strip()
    if text.startswith("{"):
        time, text = _from_json(text)
    else:
        carried = CRI.match(text) or RFC3339.match(text)
        if carried:
            time, text = carried.group(1), text[carried.end():]
    glog = GLOG.match(text)
    if glog is None:
        return LogLine(time, text)
    return LogLine(time or f"{glog.group(2)} {glog.group(3)}", _unquoted(text[glog.end():]),
                   glog.group(1))


def _from_json(text: str) -> tuple[str, str]:
    """(time, line) of a JSON log record; the text itself when it is not one."""
    try:
        record = json.loads(text)
    except ValueError:
        return "", text
    if not isinstance(record, dict):
        return "", text
    line = next((record[k] for k in MESSAGE_KEYS if isinstance(record.get(k), str)), None)
    if line is None:
        return "", text
    time = next((record[k] for k in TIME_KEYS if isinstance(record.get(k), str)), "")
    return time, line.strip()


def _unquoted(message: str) -> str:
    """A message the server quoted as a JSON string (2.43 on), as it was before."""
    if len(message) > 1 and message[0] == '"' and message[-1] == '"':
        try:
            value = json.loads(message)
        except ValueError:
            return message
        if isinstance(value, str):
            return value
    return message


def model_named(message: str) -> str:
    """The model a message is about ("" when it names none); a default instance group's
    instance (``name_0_0``) stands for its model."""
    for pattern, instance in MODEL_NAMED:
        found = pattern.search(message)
        if found:
            return INSTANCE_SUFFIX.sub("", found.group(1)) if instance else found.group(1)
    return ""


def seconds_between(first: str, last: str) -> float | None:
    """Seconds from ``first`` to ``last``, two times of :func:`read_line`; None when either is
    missing or only one carries its time zone. glog's times carry no year: a span over New Year
    reads as negative and is not given."""
    start, end = _instant(first), _instant(last)
    if start is None or end is None or (start.tzinfo is None) != (end.tzinfo is None):
        return None
    span = (end - start).total_seconds()
    return span if span >= 0 else None


def _instant(time: str) -> datetime | None:
    from datetime import datetime  # only a log's times need it

    if not time:
        return None
    if "T" in time:
        # Nanoseconds (Docker's) are more than datetime holds: microseconds are kept.
        text = re.sub(r"(\.\d{6})\d+", r"\1", time).replace("Z", "+00:00")
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            return None
    try:
        return datetime.strptime(f"2000{time}", "%Y%m%d %H:%M:%S.%f" if "." in time
                                 else "%Y%m%d %H:%M:%S")
    except ValueError:
        return None
