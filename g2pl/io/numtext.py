"""Numbers as text from untrusted input (programs, graph files, arguments): shown short, sized first.

Python refuses to convert decimal strings of more than 4,300 digits and a
5,000-digit token would fill an error message, so every reader of numeric
text checks its length with `beyond_int64` before converting it and quotes
it with `shorten`.
"""

from __future__ import annotations

INT64_DIGITS = 19  # 9223372036854775807


def shorten(text: str, limit: int = 40) -> str:
    """`text` as quoted in a message: long text cut in the middle."""
    return text if len(text) <= limit else f"{text[:16]}...{text[-8:]}"


def beyond_int64(text: str) -> bool:
    """Whether the decimal integer `text` (optional sign, leading zeros) has more digits than any int64:
    then it is out of range without being converted."""
    return len(text.strip().lstrip("+-").lstrip("0")) > INT64_DIGITS
