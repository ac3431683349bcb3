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
from functools import cache

from triton_doctor import records
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
#: Distinct line texts whose answer is remembered, and the longest remembered (at most 16 MiB
#: in all); then it starts afresh.
MAX_TEXTS = 32768
MAX_TEXT_BYTES = 512
#: What is kept of an occurrence's last line until it is read, at the end.
MAX_LAST_BYTES = 64 * 1024
#: Lines holding a rule's words in one block above which all its lines are read at once
#: (grouped by text, see ``_dense``): this many, and one line in DENSE_SHARE. Below, reading
#: the lines found one by one costs less than splitting the block, whose texts may all differ.
DENSE_LINES = 256
DENSE_SHARE = 4
#: New texts in a dense block up to which each is looked for on its own (see ``_dense``).
FEW_NEW_TEXTS = 8
#: The start of a block whose words foretell a dense one.
SAMPLE_BYTES = 16 * 1024
#: An occurrence's key: (rule, model).
Key = tuple[str, str]
#: What ``LogScan._said`` holds for a text not seen yet, and for a text whose lines are read
#: one by one (the part before it tells them apart).
_UNSEEN: Key = ("", "unseen")
_EACH: Key = ("", "each")
#: Shortest and longest run shared by several rules' words that is searched for in their stead.
SHARED_ANCHOR = (10, 16)
#: Lines kept from the log's end, to show, and the most bytes kept for them beyond a block.
TAIL_LINES = 2000
MAX_TAIL_BYTES = 16 * 1024 * 1024


class LogScan:
    """A log read so far. ``feed`` it blocks as they come, then ask for its ``evidence()``."""

    def __init__(self, source: str, tail_lines: int = TAIL_LINES) -> None:
        self.source = source
        self.lines = 0
        self.bytes_read = 0
        self._words = tuple(anchor.encode() for anchor in search_anchors(log_words()))
        if not self._words:  # a defect of the caller, which would find nothing silently
            raise RuntimeError("no log rule is registered: list the rules (catalogue) first")
        self._partial = b""
        self._found: dict[Key, LogOccurrence] = {}
        #: The last line of each occurrence, read only when the evidence is asked for.
        self._last: dict[Key, bytes] = {}
        #: What a line says (its occurrence's key, None: nothing a rule knows), by its text, the
        #: line after its first "] " (glog's prefix ends there): a model failing every request
        #: writes one line a million times, each with its own time.
        self._said: dict[bytes, Key | None] = {}
        self._tail_lines = tail_lines
        #: The log's last blocks, (bytes, start, end, newlines), read into lines only when the
        #: evidence is asked for: enough for the tail, and at most MAX_TAIL_BYTES more.
        self._recent: collections.deque[tuple[bytes, int, int, int]] = collections.deque()

    def feed(self, data: bytes) -> None:
        """Read ``data``, the log's next bytes; a line they end inside waits for the rest.
        The bytes are read where they lie (bounds, not slices): each copy of a gigabyte costs
        more than a search through it."""
        self.bytes_read += len(data)
        start = 0
        if self._partial:
            first_end = data.find(b"\n") + 1
            if first_end == 0:
                self._partial += data
                self._cut_long_line()
                return
            line = self._partial + data[:first_end]
            self._partial = b""
            self._block(line, 0, len(line))
            start = first_end
        end = data.rfind(b"\n", start) + 1
        if end > start:
            self._block(data, start, end)
        else:
            end = start
        if end < len(data):
            self._partial = data[end:]
            self._cut_long_line()

    def _cut_long_line(self) -> None:
        """A line with no newline for MAX_LINE_BYTES is cut there: each piece reads as a line."""
        while len(self._partial) > MAX_LINE_BYTES:
            piece = self._partial[:MAX_LINE_BYTES] + b"\n"
            self._partial = self._partial[MAX_LINE_BYTES:]
            self._block(piece, 0, len(piece))

    def evidence(self, final: bool = True) -> LogEvidence:
        """What the log holds; when ``final``, the line still being written is read as one
        (else it waits for its newline)."""
        if final and self._partial:
            line = self._partial + b"\n"
            self._partial = b""
            self._block(line, 0, len(line))
        for key, raw in self._last.items():
            last = read_line(raw.decode("utf-8", "replace"))
            self._found[key].last_time = last.time
            self._found[key].last_message = last.message[:MAX_MESSAGE_CHARS]
        occurrences = sorted(self._found.values(), key=lambda o: (o.first_line, o.rule))
        return LogEvidence(source=self.source, lines=self._tail(), occurrences=occurrences,
                           total_lines=self.lines, bytes_read=self.bytes_read)

    def _tail(self) -> list[str]:
        if not self._tail_lines:
            return []
        recent = b"".join(block[start:end] for block, start, end, _ in self._recent)
        return [line.decode("utf-8", "replace").rstrip("\r")
                for line in recent.split(b"\n")[-self._tail_lines - 1:-1]]

    def _block(self, block: bytes, low: int, high: int) -> None:
        """The whole lines of ``block[low:high]``, which ends with a newline."""
        if block.find(b"\0", low, high) >= 0:  # a copytruncate rotation leaves a hole of NULs
            block = block[low:high].replace(b"\0", b"")
            low, high = 0, len(block)
        newlines = block.count(b"\n", low, high)
        starts = self._matching_lines(block, low, high, max(DENSE_LINES, newlines // DENSE_SHARE))
        if starts is None:
            self._dense(block[low:high])
        else:
            number, counted = self.lines, low
            for start in sorted(starts):
                number += block.count(b"\n", counted, start)
                counted = start
                self._line(number + 1, block[start:starts[start]])
        self.lines += newlines
        self._keep_recent(block, low, high, newlines)

    def _keep_recent(self, block: bytes, low: int, high: int, newlines: int) -> None:
        self._recent.append((block, low, high, newlines))
        kept_lines = sum(part[3] for part in self._recent)
        kept_bytes = sum(part[2] - part[1] for part in self._recent)
        while len(self._recent) > 1:
            _, old_low, old_high, old_newlines = self._recent[0]
            if (kept_lines - old_newlines < self._tail_lines
                    and kept_bytes - (old_high - old_low) < MAX_TAIL_BYTES):
                break
            self._recent.popleft()
            kept_lines -= old_newlines
            kept_bytes -= old_high - old_low

    def _matching_lines(self, block: bytes, low: int, high: int,
                        dense: int) -> dict[int, int] | None:
        """Start -> end of the lines of ``block[low:high]`` holding a log rule's words; None
        when more than ``dense`` do, as the block's start foretells or the search finds (then
        every line is read, see ``_dense``)."""
        sample = block[low:min(high, low + SAMPLE_BYTES)]
        if sum(sample.count(word) for word in self._words) * (high - low) > (
                dense * len(sample)):
            return None
        starts: dict[int, int] = {}
        for word in self._words:
            at = block.find(word, low, high)
            while at >= 0:
                start = block.rfind(b"\n", low, at) + 1 or low
                end = block.find(b"\n", at, high)
                starts[start] = end
                if len(starts) > dense:
                    return None
                at = block.find(word, end, high)
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
        last = dict(zip(texts, range(len(texts)), strict=True))
        # Where each text first stands, for the few that are read: found one by one, unless
        # so many are new that one pass over the block is cheaper.
        new = sum(text not in self._said for text in counts)
        first = (dict(zip(reversed(texts), range(len(texts) - 1, -1, -1), strict=True))
                 if new > FEW_NEW_TEXTS else None)
        for text, count in counts.items():  # in the order each text first appears
            said = self._said.get(text, _UNSEEN)
            if said is None:
                continue
            if said is _UNSEEN or said is _EACH:
                start = first[text] if first is not None else texts.index(text)
            if said is _UNSEEN:
                if not any(word in text for word in self._words):
                    self._remember(text, None)
                    continue
                said = self._classify(self.lines + start + 1, lines[start], text)
                count, start = count - 1, start + 1  # the first line is read and counted
            if said is _EACH:
                for at in range(start, last[text] + 1):
                    if texts[at] == text:
                        self._read(self.lines + at + 1, lines[at])
            elif said is not None and count:
                self._found[said].count += count
                self._latest(said, self.lines + last[text] + 1, lines[last[text]])

    def _line(self, number: int, raw: bytes) -> None:
        text = raw.partition(b"] ")[2] or raw
        said = self._said.get(text, _UNSEEN)
        if said is _UNSEEN:
            self._classify(number, raw, text)
        elif said is _EACH:
            self._read(number, raw)
        elif said is not None:
            self._found[said].count += 1
            self._latest(said, number, raw)

    def _classify(self, number: int, raw: bytes, text: bytes) -> Key | None:
        """Read a line whose text is new, and remember (and return) what its text says: the key
        of its occurrence, None for nothing a rule knows, or _EACH when the part before the
        text (glog's prefix, or whatever ends in the first "] ") tells lines of it apart."""
        key = self._read(number, raw)
        said: Key | None = key
        if text is not raw and key is not None:
            alone = read_line(text.decode("utf-8", "replace")).message
            found = in_log(alone)
            if found is None or (found[0], model_named(alone)) != key:
                said = _EACH
        self._remember(text, said)
        return said

    def _remember(self, text: bytes, said: Key | None) -> None:
        """Remember what ``text`` says; a text longer than MAX_TEXT_BYTES is read each time it
        comes (a dense block still reads it once), so that memory stays bounded."""
        if len(text) > MAX_TEXT_BYTES:
            return
        if len(self._said) >= MAX_TEXTS:
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
        self._latest(key, number, raw)
        return key

    def _latest(self, key: Key, number: int, raw: bytes) -> None:
        """Line ``number`` is the occurrence's last unless a later one is already known (a
        dense block is read a text at a time, not in the log's order)."""
        if number >= self._found[key].last_line:
            self._found[key].last_line = number
            self._last[key] = raw[:MAX_LAST_BYTES]


@cache
def search_anchors(words: tuple[str, ...]) -> tuple[str, ...]:
    """What to search for so that every line holding one of ``words`` is found, in as few
    passes as can be had simply: a run of SHARED_ANCHOR characters that several words share
    (``Failed to ``, ``) received``) stands for them all, most shared first; a word that
    shares none is searched for whole. Each pass over a gigabyte costs a third of a second,
    and the lines found are read whole, so a run that is not the words finds nothing more."""
    shortest, longest = SHARED_ANCHOR
    holders: dict[str, frozenset[str]] = {}
    for word in words:
        for size in range(shortest, min(longest, len(word)) + 1):
            for start in range(len(word) - size + 1):
                run = word[start:start + size]
                if run not in holders:
                    holders[run] = frozenset(w for w in words if run in w)
    left, anchors = set(words), []
    while left:
        run, held = max(((run, held & left) for run, held in holders.items()),
                        key=lambda pair: (len(pair[1]), len(pair[0]), pair[0]))
        if len(held) < 2:
            break
        anchors.append(run)
        left -= held
    return (*anchors, *sorted(left))


def joined(parts: list[LogEvidence], tail_lines: int = TAIL_LINES) -> LogEvidence:
    """One log's evidence from that of its consecutive ranges, as one scan of it all would
    give: line numbers shifted past the ranges before, the occurrences of a (rule, model)
    joined (counts added, the first from the earliest range, the last from the latest), the
    tail taken from the end."""
    found: dict[Key, LogOccurrence] = {}
    lines: list[str] = []
    offset = 0
    for part in parts:
        for occurrence in part.occurrences:
            key = (occurrence.rule, occurrence.model)
            if key not in found and len(found) >= MAX_OCCURRENCES:
                key = (occurrence.rule, "")
            shifted = records.replace(occurrence, model=key[1],
                                          first_line=occurrence.first_line + offset,
                                          last_line=occurrence.last_line + offset)
            earlier = found.get(key)
            if earlier is None:
                found[key] = shifted
            else:
                earlier.count += shifted.count
                earlier.last_line, earlier.last_time = shifted.last_line, shifted.last_time
                earlier.last_message = shifted.last_message
        offset += part.total_lines
        lines = [*lines, *part.lines][-tail_lines:] if tail_lines else []
    first = parts[0]
    return LogEvidence(source=first.source, lines=lines,
                       occurrences=sorted(found.values(), key=lambda o: (o.first_line, o.rule)),
                       total_lines=offset, bytes_read=sum(p.bytes_read for p in parts))
