"""Reading Python sources the way the parser and LSP count lines."""

from __future__ import annotations

import io
import re
import tokenize
import zlib

# str.splitlines also breaks at form feeds and other separators that Python's parser and
# LSP do not count as line ends; only \r\n, \r and \n count.
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def only_newlines(text: str) -> bool:
    """Whether ``\n`` is the only line break of ``text``: its lines can be counted in C."""
    return "\r" not in text and not any(ch in text for ch in _OTHER_BREAKS)


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept, so ``"".join(lines) == text``."""
    if not any(ch in text for ch in _OTHER_BREAKS):
        return text.splitlines(keepends=True)
    return _LINE.findall(text)


def decode_source(data: bytes) -> str | None:
    """Text of a Python file honouring its coding cookie; None when it cannot be decoded."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None


def line_hash(line: str) -> int:
    """What a line's text is, for telling whether it is still the same line after an edit:
    trailing whitespace and the line ending do not count."""
    return zlib.crc32(line.rstrip().encode("utf-8", "surrogatepass"))


def line_hashes(text: str) -> list[int]:
    """``line_hash`` of each line of ``text``, counted as the parser and LSP count them."""
    return [line_hash(line) for line in split_lines(text)]
