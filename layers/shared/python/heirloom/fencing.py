"""Text that others wrote (stories, titles, names, questions) rendered as data, never as our
structure: in the formatted context a persona model reads, and in every prompt sent to a model.

- One line: every kind of line break (CR, CRLF, U+2028, U+0085, ...) and run of spaces becomes
  one space, so no text starts a line of its own.
- No tag: `<` and `>`, and the characters that look like them, become `&lt;` and `&gt;`, so no
  text opens or closes a tag, whatever its case or spelling.
- No heading: `#` and the characters that look like it get a backslash (markdown's escape), and
  a backslash of the text is doubled, so it cannot undo an escape of ours (or a title's quote).
- Story blocks: each story's text sits between `<story-NONCE>` and `</story-NONCE>`, the nonce
  drawn per request; text can neither guess the nonce nor write a `<`.
"""

from __future__ import annotations

import secrets

#: `<` and `>` and their look-alikes (fullwidth, small, angle quotes, angle brackets, modifiers)
LESS_THAN = "<\uff1c\ufe64\u2039\u3008\u2329\u27e8\u276e\u276c\u2770\u29fc\u02c2\u1438"
GREATER_THAN = ">\uff1e\ufe65\u203a\u3009\u232a\u27e9\u276f\u276d\u2771\u29fd\u02c3\u1433"
#: `#` and its look-alikes (fullwidth, small, music sharp, viewdata square)
HASHES = "#\uff03\ufe5f\u266f\u2317"

_TAGS = {ord(c): "&lt;" for c in LESS_THAN} | {ord(c): "&gt;" for c in GREATER_THAN}
_INLINE = _TAGS | {ord(c): "\\" + c for c in HASHES} | {ord("\\"): "\\\\"}
_TITLE = _INLINE | {ord('"'): '\\"'}


def one_line(text: str) -> str:
    return " ".join(text.split())


def inline(text: str) -> str:
    """Text for one line of the formatted context: one line, no tag, no heading."""
    return one_line(text).translate(_INLINE)


def quoted_title(text: str) -> str:
    """A title for inside our `"..."`: as `inline`, and its own quotes escaped."""
    return one_line(text).translate(_TITLE)


def untag(text: str) -> str:
    """Data for a model prompt between our tags: line breaks kept, no `<` or `>` of any kind."""
    return text.translate(_TAGS)


def nonce() -> str:
    """A fresh story-block nonce: 12 random digits (about 40 bits; a marker costs 8 tokens, one
    with 12 hex digits 13). Text written before the request cannot know it."""
    return f"{secrets.randbelow(10**12):012d}"


def story_open(fence: str) -> str:
    return f"<story-{fence}>"


def story_close(fence: str) -> str:
    return f"</story-{fence}>"
