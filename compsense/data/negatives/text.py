"""Token view of a sentence and span edits applied back onto the original string.

Families never rebuild a sentence from tokens: they name character spans of the original and what
to put there. Everything outside those spans (spacing, MRPC's "doesn 't" tokenisation, quotes,
trailing punctuation) therefore survives untouched, and an edit stays minimal by construction.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property

from compsense.data.negatives.lexicons import ENGLISH_FUNCTION_WORDS, FOREIGN_FUNCTION_WORDS

# Words (with inner apostrophes: "isn't"), clitics standing alone ("'t", "'s" in MRPC), punctuation.
TOKEN_RE = re.compile(r"\w+(?:['’]\w+)*|['’]\w+|[^\w\s]")
# Characters that glue a word into a compound we must not edit inside ("high-tech", "10:30", "a/b").
_GLUE = set("-/_:@+=&%#$*^~|\\") | {"'", "’"}


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Edit:
    """One candidate near-miss: character-span replacements on the original plus a description.

    `direction` says whether the edit adds or removes a polarity marker ("add"/"remove") or swaps
    like for like ("swap"). `marker` names the words traded, as "old>new" ("more>less", ">not"
    for an added negation); pair building balances each marker against its reverse, so no word
    is more frequent among near-misses than among originals.
    """

    replacements: tuple[tuple[int, int, str], ...]
    description: str
    direction: str = "swap"
    marker: str = ""


_MARKER_TRIM = re.compile(r"^(?:a|an|the) | (?:than|to|from)$")


def marker_of(old: str, new: str) -> str:
    """'a few' / 'many' -> 'few>many': articles and trailing prepositions do not make a new pair."""
    return f"{_MARKER_TRIM.sub('', old.lower())}>{_MARKER_TRIM.sub('', new.lower())}"


class Sentence:
    """A sentence, its tokens, and the small predicates every family asks about a position."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = [Token(m.group(), m.start(), m.end()) for m in TOKEN_RE.finditer(text)]
        self.words = [t.text for t in self.tokens]
        self.lows = [w.lower() for w in self.words]

    def __len__(self) -> int:
        return len(self.tokens)

    def low(self, i: int) -> str:
        """Lower-cased token i, or '' outside the sentence (so look-arounds need no bounds checks)."""
        return self.lows[i] if 0 <= i < len(self.lows) else ""

    def word(self, i: int) -> str:
        return self.words[i] if 0 <= i < len(self.words) else ""

    @cached_property
    def is_question(self) -> bool:
        return re.search(r"\?[\"'”’)\]]*\s*$", self.text) is not None

    @cached_property
    def contraction_style(self) -> str:
        """How this text writes "doesn't": "ptb" ("does n't"), "split" (MRPC's "doesn 't"), "plain"."""
        if " n't" in self.text:
            return "ptb"
        if "n 't" in self.text or re.search(r"\s[.,;:!?](\s|$)", self.text):
            return "split"
        return "plain"

    @cached_property
    def first_word_index(self) -> int:
        """Index of the first alphanumeric token (sentences may open with a quote or bracket)."""
        return next((i for i, t in enumerate(self.tokens) if t.text[0].isalnum()), -1)

    def is_free(self, i: int) -> bool:
        """True when token i is a whole word, not part of a compound such as "left-hand" or "10:30"."""
        tok = self.tokens[i]
        before = self.text[tok.start - 1] if tok.start > 0 else " "
        after = self.text[tok.end] if tok.end < len(self.text) else " "
        after2 = self.text[tok.end + 1] if tok.end + 1 < len(self.text) else " "
        if before in _GLUE or before.isalnum() or after in _GLUE or after.isalnum():
            return False
        # "U.S." or "3.5": a dot followed by a word character continues the token.
        return not (after in ".," and after2.isalnum())

    def joins_digits(self, i: int) -> bool:
        """Token i is the "." or "," inside a number written without spaces ("2.5", "1,200")."""
        if not 0 < i < len(self.tokens) - 1 or self.tokens[i].text not in ".,":
            return False
        before, tok, after = self.tokens[i - 1], self.tokens[i], self.tokens[i + 1]
        return before.text.isdigit() and after.text.isdigit() and before.end == tok.start and tok.end == after.start

    def is_word(self, i: int) -> bool:
        """A free, alphabetic token (no digits, no punctuation)."""
        return 0 <= i < len(self.words) and self.words[i].isalpha() and self.is_free(i)

    def is_capitalised_name(self, i: int) -> bool:
        """A capitalised word that is not capitalised merely because it starts the sentence."""
        word = self.word(i)
        return self.is_word(i) and word[0].isupper() and i != self.first_word_index and word != "I"

    def span(self, i: int, j: int) -> tuple[int, int]:
        """Character span covering tokens i..j-1."""
        return self.tokens[i].start, self.tokens[j - 1].end

    def replace(self, i: int, j: int, new: str) -> tuple[int, int, str]:
        """A replacement of tokens i..j-1 by `new`, with the case of token i carried over."""
        start, end = self.span(i, j)
        return start, end, match_case(self.tokens[i].text, new)

    def substring(self, i: int, j: int) -> str:
        start, end = self.span(i, j)
        return self.text[start:end]


def match_case(source: str, new: str) -> str:
    """Give `new` the capitalisation pattern of `source` ("Left" -> "Right", "LEFT" -> "RIGHT")."""
    if not new:
        return new
    if len(source) > 1 and source.isupper() and source.isalpha():
        return new.upper()
    if source[:1].isupper():
        return new[0].upper() + new[1:]
    return new


def apply_edit(text: str, edit: Edit) -> str:
    """Apply an edit's replacements (right to left, so earlier offsets stay valid)."""
    out = text
    for start, end, new in sorted(edit.replacements, reverse=True):
        out = out[:start] + new + out[end:]
    return _restore_initial_capital(text, out)


def _restore_initial_capital(original: str, new: str) -> str:
    """A sentence that started with a capital still does after the edit ("Do not touch" -> "Touch")."""
    first_old = next((c for c in original if c.isalpha()), "")
    idx = next((k for k, c in enumerate(new) if c.isalpha()), None)
    if idx is None or not first_old.isupper() or new[idx].isupper():
        return new
    return new[:idx] + new[idx].upper() + new[idx + 1 :]


def stable_hash(text: str) -> int:
    """A process-independent 64-bit hash (Python's str hash is salted per process)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def looks_english(sent: Sentence) -> bool:
    """Whether the rule lexicons apply: some ASCII words, and no more foreign than English function words.

    German "Die Katze ist nicht hier" shares "die"/"was"/"will" with English spellings; counting
    function words of both keeps the English rules off such text instead of producing nonsense.
    """
    words = [t for t in sent.lows if t.isalpha()]
    ascii_words = [w for w in words if w.isascii()]
    if not ascii_words or len(ascii_words) < 0.7 * len(words):
        return False
    english = sum(w in ENGLISH_FUNCTION_WORDS for w in ascii_words)
    foreign = sum(w in FOREIGN_FUNCTION_WORDS for w in words)
    if len(ascii_words) >= 4 and english == 0:  # "Die Firma hat 12 Mitarbeiter"
        return False
    return foreign <= english
