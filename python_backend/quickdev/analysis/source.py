"""Reading Python sources the way the parser and LSP count lines."""

from __future__ import annotations

import io
import re
import tokenize

# str.splitlines also breaks at form feeds and other separators that Python's parser and
# LSP do not count as line ends; only \r\n, \r and \n count.
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


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
