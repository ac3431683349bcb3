"""Read a whole server log once and keep what the log rules know of it, in bounded memory.

A log runs to gigabytes and almost all of it is healthy. The scan takes it a block at a time
and looks for the log rules' words with ``bytes.find``, one pass per run of words (each pass
runs at memory speed, far faster than a regular expression of them all); only the lines that
hold one are decoded and read. Lines saying the same thing about the same model are gathered
into one occurrence (count, first and last line, time and message), and the log's last lines
are kept to show. The scan is fed as the log comes, so ``watch`` feeds it only what a log has
gained since its last poll.
"""

from __future__ import annotations

import collections

from triton_doctor.evidence import LogEvidence, LogOccurrence
from triton_doctor.server_words import explain_reason, in_log, log_words
from triton_doctor.triton.server_log import model_named, read_line

#: A line longer than this is cut there (the rest reads as the next line): a log of one
#: endless line must not be held whole.
MAX_LINE_BYTES = 1024 * 1024
#: Characters of a message kept in an occurrence: a quoted traceback runs to kilobytes.
MAX_MESSAGE_CHARS = 4000
#: Distinct (rule, model) occurrences kept; lines beyond them count under the rule alone.
MAX_OCCURRENCES = 1000
#: Lines holding a rule's words in one block above which all its lines are read at once.
DENSE_LINES = 256
#: The start of a block whose words foretell a dense one.
SAMPLE_BYTES = 64 * 1024
#: An occurrence's key: (rule, model).
Key = tuple[str, str]
#: What ``LogScan._said`` holds for a text not seen yet, and for a text whose lines are read
#: one by one (the part before it tells them apart).
_UNSEEN: Key = ("", "unseen")
_EACH: Key = ("", "each")
#: Lines kept from the log's end, to show.
TAIL_LINES = 2000


class LogScan:
    """A log read so far. ``feed`` it blocks as they come, then ask for its ``evidence()``."""

    def __init__(self, source: str, tail_lines: int = TAIL_LINES) -> None:
        self.source = source
        self.lines = 0
        self.bytes_read = 0
        self._words = tuple(word.encode() for word in log_words())
        assert self._words, "no log rule is registered: list the rules (catalogue) first"
        self._partial = b""
        self._found: dict[Key, LogOccurrence] = {}
        #: The last line of each occurrence, read only when the evidence is asked for.
        self._last: dict[Key, bytes] = {}
        #: What a line says (its occurrence's key, None: nothing a rule knows), by its text, the
        #: line after its first "] " (glog's prefix ends there): a model failing every request
        #: writes one line a million times, each with its own time.
        self._said: dict[bytes, Key | None] = {}
        self._tail: collections.deque[bytes] = collections.deque(maxlen=tail_lines)

    def feed(self, data: bytes) -> None:
        """Read ``data``, the log's next bytes; a line they end inside waits for the rest."""
        self.bytes_read += len(data)
        data = self._partial + data
        end = data.rfind(b"\n") + 1
        while len(data) - end > MAX_LINE_BYTES:  # no newline for a megabyte: cut it there
            end += MAX_LINE_BYTES
        self._partial = data[end:]
        if end:
            self._block(data[:end])

    def evidence(self, final: bool = True) -> LogEvidence:
        """What the log holds; when ``final``, the line still being written is read as one
        (else it waits for its newline)."""
        if final and self._partial:
            self._block(self._partial + b"\n")
            self._partial = b""
        lines = [line.decode("utf-8", "replace").rstrip("\r\n") for line in self._tail]
        for key, raw in self._last.items():
            last = read_line(raw.decode("utf-8", "replace"))
            self._found[key].last_time = last.time
            self._found[key].last_message = last.message[:MAX_MESSAGE_CHARS]
        occurrences = sorted(self._found.values(), key=lambda o: (o.first_line, o.rule))
        return LogEvidence(source=self.source, lines=lines, occurrences=occurrences,
                           total_lines=self.lines, bytes_read=self.bytes_read)

    def _block(self, block: bytes) -> None:
        """Whole lines (``block`` ends with a newline, or is a cut line)."""
        if b"\0" in block:  # a copytruncate rotation leaves a hole of NULs
            block = block.replace(b"\0", b"")
        starts = self._matching_lines(block)
        if starts is None:
            self._dense(block)
        else:
            number, counted = self.lines, 0
            for start in sorted(starts):
                number += block.count(b"\n", counted, start)
                counted = start
                self._line(number + 1, block[start:starts[start]])
        self.lines += block.count(b"\n") + (not block.endswith(b"\n"))
        self._keep_tail(block)

    def _matching_lines(self, block: bytes) -> dict[int, int] | None:
        """Start -> end of the lines holding a log rule's words; None when more than
        DENSE_LINES do, as the block's start foretells or the search finds (then every line is
        read, see ``_dense``)."""
        sample = block[:SAMPLE_BYTES]
        if sum(sample.count(word) for word in self._words) * len(block) > (
                DENSE_LINES * len(sample)):
            return None
        starts: dict[int, int] = {}
        for word in self._words:
            at = block.find(word)
            while at >= 0:
                start = block.rfind(b"\n", 0, at) + 1
                end = block.find(b"\n", at)
                end = len(block) if end < 0 else end
                starts[start] = end
                if len(starts) > DENSE_LINES:
                    return None
                at = block.find(word, end)
        return starts

    def _dense(self, block: bytes) -> None:
        """A block where many lines hold a rule's words (a model failing every request writes
        one line per request): its lines are grouped by their text first, so that each text is
        read once and the rest is counted."""
        lines = block.split(b"\n")
        if block.endswith(b"\n"):
            lines.pop()
        texts = [line.partition(b"] ")[2] or line for line in lines]
        counts = collections.Counter(texts)
        first = dict(zip(reversed(texts), range(len(texts) - 1, -1, -1), strict=True))
        last = dict(zip(texts, range(len(texts)), strict=True))
        for text, count in counts.items():  # in the order each text first appears
            said = self._said.get(text, _UNSEEN)
            start = first[text]
            if said is _UNSEEN:
                if not any(word in text for word in self._words):
                    continue
                self._classify(self.lines + start + 1, lines[start], text)
                said = self._said[text]
                count, start = count - 1, start + 1  # the first line is read and counted
            if said is _EACH:
                for at in range(start, last[text] + 1):
                    if texts[at] == text:
                        self._read(self.lines + at + 1, lines[at])
            elif said is not None and count:
                self._found[said].count += count
                self._found[said].last_line = self.lines + last[text] + 1
                self._last[said] = lines[last[text]]

    def _line(self, number: int, raw: bytes) -> None:
        text = raw.partition(b"] ")[2] or raw
        said = self._said.get(text, _UNSEEN)
        if said is _UNSEEN:
            self._classify(number, raw, text)
        elif said is _EACH:
            self._read(number, raw)
        elif said is not None:
            self._found[said].count += 1
            self._found[said].last_line = number
            self._last[said] = raw

    def _classify(self, number: int, raw: bytes, text: bytes) -> None:
        """Read a line whose text is new, and remember what its text says: the key of its
        occurrence, None for nothing a rule knows, or _EACH when the part before the text
        (glog's prefix, or whatever ends in the first "] ") tells lines of this text apart."""
        key = self._read(number, raw)
        said: Key | None = key
        if text is not raw and key is not None:
            alone = read_line(text.decode("utf-8", "replace")).message
            found = in_log(alone)
            if found is None or (found[0], model_named(alone)) != key:
                said = _EACH
        if len(self._said) >= MAX_OCCURRENCES:
            self._said.clear()
        self._said[text] = said

    def _read(self, number: int, raw: bytes) -> Key | None:
        """Read a line whole and count it: the key of its occurrence (made here when it is the
        first), or None when no log rule's words are in its message."""
        line = read_line(raw.decode("utf-8", "replace"))
        found = in_log(line.message)
        if found is None:  # the words were in what carried the line, not in its message
            return None
        rule, says = found
        key = (rule, model_named(line.message))
        if key not in self._found and len(self._found) >= MAX_OCCURRENCES:
            key = (rule, "")
        occurrence = self._found.get(key)
        if occurrence is None:
            explained = explain_reason(line.message) or ""
            occurrence = self._found[key] = LogOccurrence(
                rule=rule, says=says, model=key[1],
                explained_by="" if explained == rule else explained,
                first_line=number, first_time=line.time,
                first_message=line.message[:MAX_MESSAGE_CHARS])
        occurrence.count += 1
        occurrence.last_line = number
        self._last[key] = raw
        return key

    def _keep_tail(self, block: bytes) -> None:
        """The block's last lines join the tail."""
        wanted = self._tail.maxlen or 0
        cut = len(block) - 1
        for _ in range(wanted):
            cut = block.rfind(b"\n", 0, cut)
            if cut < 0:
                break
        self._tail.extend(block[cut + 1:].splitlines(keepends=True)[-wanted:] if wanted else [])

