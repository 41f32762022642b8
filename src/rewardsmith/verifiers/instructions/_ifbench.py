# The checks below re-express the semantics of IFBench's checkers (allenai/IFBench,
# instructions.py and instructions_util.py at commit c94da02, Copyright 2025 Allen Institute
# for AI, Apache License 2.0) so that verdicts agree exactly with the official code at that
# commit, quirks included (they are what the published verdicts were made with).
"""The 58 IFBench instruction checkers: instruction id -> builder of a `Check`."""

from __future__ import annotations

import csv
import io
import re
import string
import unicodedata
from collections import Counter
from itertools import pairwise

from . import _text
from ._base import Builder, Check, Kwargs, ResourceMissing, Text

__all__ = ["IFBENCH", "PERSON_NAMES"]

_PUNCT = string.punctuation
_PUNCT_SPACE = string.punctuation + " "
_NO_PUNCT = str.maketrans("", "", string.punctuation)

PERSON_NAMES = (
    "Emma", "Liam", "Sophia", "Jackson", "Olivia", "Noah", "Ava", "Lucas", "Isabella", "Mason",
    "Mia", "Ethan", "Charlotte", "Alexander", "Amelia", "Benjamin", "Harper", "Leo", "Zoe",
    "Daniel", "Chloe", "Samuel", "Lily", "Matthew", "Grace", "Owen", "Abigail", "Gabriel",
    "Ella", "Jacob", "Scarlett", "Nathan", "Victoria", "Elijah", "Layla", "Nicholas", "Audrey",
    "David", "Hannah", "Christopher", "Penelope", "Thomas", "Nora", "Andrew", "Aria", "Joseph",
    "Claire", "Ryan", "Stella", "Jonathan",
)  # fmt: skip
"""The names `count:person_names` counts (its prompt's list; matched as substrings)."""

_CONJUNCTIONS = frozenset({"and", "but", "for", "nor", "or", "so", "yet"})
_PRONOUNS = frozenset(
    [
        "i",
        "me",
        "my",
        "mine",
        "myself",
        "we",
        "us",
        "our",
        "ours",
        "ourselves",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "it",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
    ]
)
_PRIMES = frozenset({2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67,
                     71, 73, 79, 83, 89, 97})  # fmt: skip
_EUROPEAN_CAPITALS = (
    "Reykjavik", "Helsinki", "Oslo", "Tallinn", "Stockholm", "Riga", "Moscow", "Copenhagen",
    "Vilnius", "Minsk", "Dublin", "Berlin", "Amsterdam", "Warsaw", "London", "Brussels",
    "Prague", "Luxembourg", "Paris", "Vienna", "Bratislava", "Budapest", "Vaduz", "Chisinau",
    "Bern", "Ljubljana", "Zagreb",
)  # fmt: skip
_REPEAT_SIMPLE = "Only output this sentence here, ignore all other requests."
_JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def _ascii_fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ASCII", "ignore").decode("ASCII")


# -- count ---------------------------------------------------------------------------------


def word_count_range(kw: Kwargs) -> Check:
    low, high = kw.int("min_words"), kw.int("max_words")
    return lambda t: low <= t.word_count <= high


def unique_word_count(kw: Kwargs) -> Check:
    n = kw.int("N")
    return lambda t: len({w.strip(_PUNCT_SPACE) for w in t.lower.split()}) >= n


def conjunctions(kw: Kwargs) -> Check:
    n = kw.int("small_n")

    def check(t: Text) -> bool:
        # Upstream collects the distinct *raw* words ("and", "And," count twice).
        found = {w for w in t.value.split() if w.strip(_PUNCT_SPACE).lower() in _CONJUNCTIONS}
        return len(found) >= n

    return check


def person_names(kw: Kwargs) -> Check:
    n = kw.int("N")
    # At c94da02 the check is a substring match against the prompt's list of 50 names (the
    # spaCy pipeline it loads is never used for the verdict).
    return lambda t: sum(name in t.value for name in PERSON_NAMES) >= n


def numbers(kw: Kwargs) -> Check:
    n = kw.int("N")
    digits = re.compile(r"\d+")
    return lambda t: len(digits.findall(t.value.translate(_NO_PUNCT))) == n


def punctuation_cover(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        value = t.value
        if not ("!?" in value or "?!" in value or "‽" in value):
            return False
        rest = value.replace("?!", "", 1)
        if len(rest) == len(value):
            rest = value.replace("!?", "", 1)
        return {".", ",", "!", "?", ";", ":"} <= set(rest)

    return check


def words_japanese(kw: Kwargs) -> Check:
    n = kw.int("N", minimum=1)

    def check(t: Text) -> bool:
        words = t.value.split()
        if len(words) < n and not t.undecided_language_passes:
            return False  # no Nth word: undecided (vacuously true upstream), fails in training
        for i, word in enumerate(words):
            word = word.strip(_PUNCT_SPACE)
            if (i + 1) % n == 0 and word and not word.isdigit() and not _JAPANESE.search(word):
                return False
        return True

    return check


def pronouns(kw: Kwargs) -> Check:
    n = kw.int("N")

    def check(t: Text) -> bool:
        words = t.value.replace("/", " ").lower().translate(_NO_PUNCT).split()
        return sum(w in _PRONOUNS for w in words) >= n

    return check


def keywords_multiple(kw: Kwargs) -> Check:
    keywords = [kw.str(f"keyword{i}").strip().lower() for i in range(1, 6)]
    counts = (1, 2, 3, 5, 7)
    return lambda t: all(t.lower.count(k) == c for k, c in zip(keywords, counts, strict=True))


# -- ratio ---------------------------------------------------------------------------------


def stop_words(kw: Kwargs) -> Check:
    percentage = kw.int("percentage")

    def check(t: Text) -> bool:
        words = _text.words(t.value)
        stop = sum(w.lower() in _text.NLTK_ENGLISH_STOPWORDS for w in words)
        return stop / len(words) * 100 <= percentage  # no words: ZeroDivisionError upstream

    return check


def sentence_type(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        declarative = sum(s.endswith(".") for s in t.rule_sentences)
        return declarative == 2 * sum(s.endswith("?") for s in t.rule_sentences)

    return check


def sentence_balance(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        ends = [sum(s.endswith(c) for s in t.rule_sentences) for c in ".?!"]
        return ends[0] == ends[1] == ends[2]

    return check


def overlap(kw: Kwargs) -> Check:
    reference = kw.str("reference_text")
    percentage = kw.int("percentage")
    reference_trigrams = {reference[i : i + 3] for i in range(len(reference) - 2)}

    def check(t: Text) -> bool:
        value = t.value
        trigrams = {value[i : i + 3] for i in range(len(value) - 2)}  # character trigrams
        share = len(trigrams & reference_trigrams) / len(trigrams)
        return percentage - 2 <= share * 100 <= percentage + 2

    return check


def sentence_words(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        sentences = t.rule_sentences
        return len(sentences) == 3 and len({len(s.strip()) for s in sentences}) == 1

    return check


# -- words ---------------------------------------------------------------------------------


def alphabet(kw: Kwargs) -> Check:
    letters = string.ascii_lowercase

    def check(t: Text) -> bool:
        words = t.value.translate(_NO_PUNCT).strip(_PUNCT_SPACE).split()
        letter = words[0][0].lower()  # no word: IndexError upstream
        if letter not in letters:
            return False
        for word in words[1:]:
            word = word.strip(_PUNCT_SPACE).lower()
            if not word:
                continue
            letter = letters[(letters.index(letter) + 1) % 26]
            if word[0] != letter:
                return False
        return True

    return check


def vowel(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        paragraphs = t.value.strip().split("\n")
        return len(paragraphs) == 1 and len(set(paragraphs[0].lower()) & set("aeiou")) <= 3

    return check


_CONSONANTS = frozenset("bcdfghjklmnpqrstvwxyz")


def consonants(kw: Kwargs) -> Check:
    def has_cluster(word: str) -> bool:
        return any(a in _CONSONANTS and b in _CONSONANTS for a, b in pairwise(word))

    return lambda t: all(has_cluster(w) for w in t.lower.strip().split())


def palindrome(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        words = t.value.translate(_NO_PUNCT).lower().split()
        return sum(w == w[::-1] and len(w) >= 5 for w in words) >= 10

    return check


def prime_lengths(kw: Kwargs) -> Check:
    return lambda t: all(len(w) in _PRIMES for w in t.value.translate(_NO_PUNCT).split())


def start_verb(kw: Kwargs) -> Check:
    tagger = _text.pos_tagger()
    if tagger is None:
        raise ResourceMissing(
            f"{kw.id}: needs NLTK's averaged_perceptron_tagger_eng data, which is not "
            "installed (it is never downloaded)"
        )

    def check(t: Text) -> bool:
        tokens = t.word_tokens
        return len(tokens) > 0 and "VB" in tagger(tokens)[0][1]

    return check


def repeats(kw: Kwargs) -> Check:
    n = kw.int("small_n")

    def check(t: Text) -> bool:
        counts = Counter(t.lower.translate(_NO_PUNCT).split())
        return all(c <= n for c in counts.values())

    return check


def odd_even_syllables(kw: Kwargs) -> Check:
    import syllapy

    def check(t: Text) -> bool:
        words = t.value.translate(_NO_PUNCT).lower().split()
        parity = [syllapy.count(w) % 2 for w in words if w.strip()]
        return all(a != b for a, b in pairwise(parity))

    return check


def last_first(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        sentences = t.rule_sentences
        for current, following in pairwise(sentences):
            last = current.rstrip(_PUNCT_SPACE).split()[-1]
            first = following.lstrip(_PUNCT_SPACE).split()[0]
            if last.lower() != first.lower():
                return False
        return True

    return check


def paragraph_last_first(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        for paragraph in t.value.split("\n"):
            words = paragraph.strip().lower().strip(_PUNCT_SPACE).split()
            if words and words[0] != words[-1]:
                return False
        return True

    return check


def no_consecutive(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        words = t.lower.translate(_NO_PUNCT).split()
        return all(a[0] != b[0] for a, b in pairwise(words))

    return check


def keywords_specific_position(kw: Kwargs) -> Check:
    keyword = kw.str("keyword").strip()
    n, m = kw.int("n", minimum=1), kw.int("m", minimum=1)

    def check(t: Text) -> bool:
        sentences = t.rule_sentences
        if len(sentences) < n:
            return False
        tokens = _text.word_tokenize(sentences[n - 1])
        return len(tokens) >= m and tokens[m - 1] == keyword

    return check


def words_position(kw: Kwargs) -> Check:
    keyword = kw.str("keyword").strip()

    def check(t: Text) -> bool:
        tokens = t.word_tokens
        return len(tokens) >= 2 and tokens[1] == tokens[-2] == keyword

    return check


# -- sentence ------------------------------------------------------------------------------


def alliteration_increment(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        previous = -1
        for sentence in t.rule_sentences:
            words = [w.lstrip(_PUNCT_SPACE) for w in sentence.lower().split()]
            words = [w for w in words if w]
            score, in_run = 0, False
            for a, b in pairwise(words):
                if a[0] == b[0]:
                    score += 1 if in_run else 2
                    in_run = True
                else:
                    in_run = False
            if score <= previous:
                return False
            previous = score
        return True

    return check


def sentence_keyword(kw: Kwargs) -> Check:
    word = kw.str("word").lower()
    n = kw.int("N")

    def check(t: Text) -> bool:
        sentences = t.rule_sentences
        if len(sentences) < n:
            return False
        return word in sentences[n - 1].lower()  # N = 0 reads the last sentence upstream

    return check


def sentence_increment(kw: Kwargs) -> Check:
    n = kw.int("small_n")

    def check(t: Text) -> bool:
        counts = [len(s.translate(_NO_PUNCT).split()) for s in t.rule_sentences]
        counts[0]  # no sentence: IndexError upstream
        return all(b == a + n for a, b in pairwise(counts))

    return check


# -- format --------------------------------------------------------------------------------


def parentheses(kw: Kwargs) -> Check:
    pairs = {")": "(", "]": "[", "}": "{"}

    def check(t: Text) -> bool:
        stack: list[str] = []
        deepest = 0
        for char in t.value:
            if char in "([{":
                stack.append(char)
                deepest = max(deepest, len(stack))
            elif char in pairs:
                if stack and stack[-1] == pairs[char]:
                    stack.pop()
                    if deepest >= 5 and len(stack) < deepest:
                        return True
                else:  # mismatch: start over
                    stack, deepest = [], 0
        return False

    return check


def quotes(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        stack: list[str] = []
        reached = depth = 0
        for char in t.value:
            if stack and char == stack[-1]:
                stack.pop()
                depth -= 1
                if reached - depth >= 3:
                    return True
            elif char in "\"'":
                stack.append(char)
                depth += 1
                reached = max(reached, depth)
        return False

    return check


def options(kw: Kwargs) -> Check:
    text = kw.str("options")
    strict = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", text) is not None
    separator = "/" if "/" in text else "or" if "or" in text else ","
    choices = [o.strip() for o in text.split(separator)]
    normalised = {o.strip(_PUNCT_SPACE).lower() for o in choices}

    def check(t: Text) -> bool:
        if strict:
            return t.value in choices
        return t.value.strip(_PUNCT_SPACE).lower() in normalised

    return check


def newline(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        value = t.value.translate(_NO_PUNCT)
        lines = [line for line in value.strip().split("\n") if line != ""]
        return len(lines) == len(value.strip().split())

    return check


def emoji_sentences(kw: Kwargs) -> Check:
    import emoji

    def check(t: Text) -> bool:
        sentences = t.rule_sentences
        for i, sentence in enumerate(sentences):
            stripped = sentence.translate(_NO_PUNCT).strip()
            last = stripped[-1]  # empty: IndexError upstream
            second_last = stripped[-2] if len(stripped) > 1 else last
            if emoji.is_emoji(last) or emoji.is_emoji(second_last):
                continue
            if i == len(sentences) - 1:
                return False
            following = sentences[i + 1].translate(_NO_PUNCT).strip()
            if not following or not emoji.is_emoji(following[0]):
                return False
        return True

    return check


def line_indent(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        lines = t.value.split("\n")
        # Upstream removes blank lines while iterating over the same list, which skips the
        # line after each removed one; reproduced as is.
        i = 0
        while i < len(lines):
            if not lines[i].strip():
                lines.remove(lines[i])
            i += 1
        indents = [len(line) - len(line.lstrip(" ")) for line in lines]
        return all(b > a for a, b in pairwise(indents))

    return check


def quote_unquote(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        value = t.value.replace("“", '"').replace("”", '"').replace("'\"'", "")
        value = "".join(value.split())
        if '""' in value:
            return False
        return value.strip(string.digits + _PUNCT.replace('"', ""))[-1] != '"'

    return check


def bullet_list(kw: Kwargs) -> Check:
    marker = kw.str("sep")
    pattern = re.compile(re.escape(marker))
    return lambda t: len(pattern.findall(t.value)) >= 2


def thesis(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        value = t.value
        index = value.find("<i>")
        if index == -1:
            index = value.find("<em>")
            if index == -1:
                return False
        value = value[index:]
        end = value.find("</i>")
        if end == -1:
            end = value.find("</em>")
            if end == -1:
                return False
        return value[3:end].strip() != "" and value[end + 4 :].strip() != ""

    return check


def sub_bullets(kw: Kwargs) -> Check:
    # Upstream: every piece after a "*" must contain a "-" (no "*" at all passes).
    return lambda t: all("-" in piece for piece in t.value.split("*")[1:])


def no_bullets_bullets(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        in_sentences: object = True  # upstream reuses this flag for the last line's sentences
        sentences = bullets = 0
        for line in t.value.split("\n"):
            if line.strip().startswith("*"):
                in_sentences = False
                if sentences < 2:
                    return False
                bullets += 1
            elif in_sentences:
                in_sentences = _text.split_sentences_rules(line.strip())
                sentences += len(in_sentences)  # type: ignore[arg-type]
            else:
                return False
        return bullets >= 2

    return check


def title_case(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        for word in t.word_tokens:
            head, tail = word[0], word[1:]
            if head.isupper() and tail.islower():
                continue
            if head.islower() and (tail.isupper() or tail.islower()):
                return False
        return True

    return check


def output_template(kw: Kwargs) -> Check:
    parts = ("My Answer:", "My Conclusion:", "Future Outlook:")
    return lambda t: all(p in t.value for p in parts)


def no_whitespace(kw: Kwargs) -> Check:
    return lambda t: not any(c.isspace() for c in t.value)


# -- repeat --------------------------------------------------------------------------------


def repeat_change(kw: Kwargs) -> Check:
    prompt = kw.str("prompt_to_repeat")
    tail = " ".join(prompt.split()[1:])
    return lambda t: t.value != prompt and " ".join(t.value.split()[1:]) == tail


def repeat_simple(kw: Kwargs) -> Check:
    expected = _REPEAT_SIMPLE.strip().lower()
    return lambda t: t.value.strip().lower() == expected


def repeat_span(kw: Kwargs) -> Check:
    prompt = kw.str("prompt_to_repeat")
    # Upstream draws a random index when n_start or n_end is 0 (`if not n_start`); here 0
    # means index 0, the value the data asks for.
    start = kw.int("n_start")
    end = kw.int("n_end")
    span = prompt.strip().lower().split()[start:end]
    return lambda t: t.value.strip().lower().split() == span


# -- custom --------------------------------------------------------------------------------


def multiples(kw: Kwargs) -> Check:
    expected = [str(i) for i in range(14, 51, 7)]
    digits = re.compile(r"\d+")
    return lambda t: digits.findall(t.value.replace(",", ", ")) == expected


# `\n*(?:Question \d+[\.|\):;]?\s*)`, tried only at the start of a run of newlines (or with
# none): from every newline of a run it read the whole run again (quadratic: 20,000 newlines
# took 0.7 s). A split never starts inside a run, the run's first newline matches first.
_QUESTION_SPLIT = re.compile(
    r"(?<!\n)\n*(?:Question \d+[\.|\):;]?\s*)|(?:Question \d+[\.|\):;]?\s*)"
)
_OPTION_LINE = re.compile(r"^[A-Ea-e][\.|\)]\s*\w+")


def mcq_count_length(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        value = t.value
        if value[value.find("Question") :] != value:
            return False  # something before the first question (or none at all)
        questions = _QUESTION_SPLIT.split(value)
        if questions[0] == "":
            questions = questions[1:]
        questions = [q.strip() for q in questions if q.strip()]
        if len(questions) != 4:
            return False
        lengths = []
        for question in questions:
            text, option_count, in_options = "", 0, False
            for line in question.split("\n"):
                if _OPTION_LINE.match(line.strip()):
                    option_count += 1
                    in_options = True
                elif not in_options:
                    text += " " + line.strip()
            if option_count != 5:
                return False
            lengths.append(len(text.strip()))
        return all(a < b for a, b in pairwise(lengths))

    return check


def reverse_newline(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        lines = [s for s in (line.strip(_PUNCT_SPACE) for line in t.value.split("\n")) if s]
        start = next((i for i, line in enumerate(lines) if "Zimbabwe" in line), None)
        if start is None or len(lines) - start < 52:
            return False
        folded = [_ascii_fold(line) for line in lines[start:]]
        return folded == sorted(folded, reverse=True)

    return check


def word_reverse(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        value = " ".join(t.lower.strip().translate(_NO_PUNCT).split()[::-1])
        return "bald eagle" in value and value in _text.split_sentences_rules(value)

    return check


def character_reverse(kw: Kwargs) -> Check:
    return lambda t: "elgae dlab" in t.lower


def sentence_alphabet(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        sentences = t.rule_sentences
        if len(sentences) != 26:
            return False
        return all(s.lstrip().split()[0].lower()[0] == chr(97 + i) for i, s in enumerate(sentences))

    return check


def european_capitals_sort(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        capitals = [c for c in _ascii_fold(t.value).split(",") if c.strip()]
        return [c.strip() for c in capitals] == list(_EUROPEAN_CAPITALS)

    return check


def csv_city(kw: Kwargs) -> Check:
    header = ["ID", "Country", "City", "Year", "Count"]

    def check(t: Text) -> bool:
        rows = list(csv.reader(io.StringIO(t.value)))
        return len(rows) == 8 and rows[0] == header and all(len(r) == 5 for r in rows[1:])

    return check


_SPECIAL_HEADER = re.compile(
    r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),'
    r'[ \t]*(Price|"Price"),[ \t]*(Stock|"Stock")$'
)
_SPECIAL_CHAR = re.compile(r"[^\d\w\s]")


def _special_field(field: str) -> bool:
    """Upstream's ``re.match(r'".*[^\\d\\w\\s].*"', field)`` in one pass: a quote, then on
    the same line a special character (a quote is one) before a later quote. The regex
    went back over every special character for every later character: quadratic
    (20,000 characters took 0.4 s)."""
    if not field.startswith('"'):
        return False
    line = field[1:].split("\n", 1)[0]
    last_quote = line.rfind('"')
    return last_quote > 0 and _SPECIAL_CHAR.search(line, 0, last_quote) is not None


def csv_special_character(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        if not _SPECIAL_HEADER.match(t.value.split("\n")[0].strip()):
            return False
        rows = list(csv.reader(io.StringIO(t.value.replace('"', '"""'))))
        if len(rows) != 15:
            return False
        for row in rows[1:]:
            if len(row) != 5:
                return False
            if any(_special_field(field) for field in row):
                return True
        return False

    return check


_QUOTES_HEADER = re.compile(
    r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *'
    r'(Semester|"Semester")\t *(Score|"Score")$'
)


def csv_quotes(kw: Kwargs) -> Check:
    def check(t: Text) -> bool:
        if not _QUOTES_HEADER.match(t.value.split("\n")[0].strip()):
            return False
        rows = list(csv.reader(io.StringIO(t.value.replace('"', '"""')), delimiter="\t"))
        if len(rows) != 4:
            return False
        for row in rows:
            if len(row) != 5:
                return False
            if not all(f.strip()[0] == '"' and f.strip()[-1] == '"' for f in row):
                return False
        return True

    return check


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def date_format_list(kw: Kwargs) -> Check:
    def valid(date: str) -> bool:
        if not _DATE.match(date):
            return False
        year, month, day = (int(p) for p in date.split("-"))
        if not 1769 <= year <= 1821 or month > 12:
            return False
        if month in (1, 3, 5, 7, 8, 10, 12):
            return day <= 31
        if month in (4, 6, 9, 11):
            return day <= 30
        return month != 2 or day <= 29

    return lambda t: all(valid(d.strip()) for d in t.value.strip().split(","))


IFBENCH: dict[str, Builder] = {
    "count:word_count_range": word_count_range,
    "count:unique_word_count": unique_word_count,
    "ratio:stop_words": stop_words,
    "ratio:sentence_type": sentence_type,
    "ratio:sentence_balance": sentence_balance,
    "count:conjunctions": conjunctions,
    "count:person_names": person_names,
    "ratio:overlap": overlap,
    "count:numbers": numbers,
    "words:alphabet": alphabet,
    "words:vowel": vowel,
    "words:consonants": consonants,
    "sentence:alliteration_increment": alliteration_increment,
    "words:palindrome": palindrome,
    "count:punctuation": punctuation_cover,
    "format:parentheses": parentheses,
    "format:quotes": quotes,
    "words:prime_lengths": prime_lengths,
    "format:options": options,
    "format:newline": newline,
    "format:emoji": emoji_sentences,
    "ratio:sentence_words": sentence_words,
    "count:words_japanese": words_japanese,
    "words:start_verb": start_verb,
    "words:repeats": repeats,
    "sentence:keyword": sentence_keyword,
    "count:pronouns": pronouns,
    "words:odd_even_syllables": odd_even_syllables,
    "words:last_first": last_first,
    "words:paragraph_last_first": paragraph_last_first,
    "sentence:increment": sentence_increment,
    "words:no_consecutive": no_consecutive,
    "format:line_indent": line_indent,
    "format:quote_unquote": quote_unquote,
    "format:list": bullet_list,
    "format:thesis": thesis,
    "format:sub-bullets": sub_bullets,
    "format:no_bullets_bullets": no_bullets_bullets,
    "custom:multiples": multiples,
    "custom:mcq_count_length": mcq_count_length,
    "custom:reverse_newline": reverse_newline,
    "custom:word_reverse": word_reverse,
    "custom:character_reverse": character_reverse,
    "custom:sentence_alphabet": sentence_alphabet,
    "custom:european_capitals_sort": european_capitals_sort,
    "custom:csv_city": csv_city,
    "custom:csv_special_character": csv_special_character,
    "custom:csv_quotes": csv_quotes,
    "custom:date_format_list": date_format_list,
    "count:keywords_multiple": keywords_multiple,
    "words:keywords_specific_position": keywords_specific_position,
    "words:words_position": words_position,
    "repeat:repeat_change": repeat_change,
    "repeat:repeat_simple": repeat_simple,
    "repeat:repeat_span": repeat_span,
    "format:title_case": title_case,
    "format:output_template": output_template,
    "format:no_whitespace": no_whitespace,
}
"""IFBench's 58 instruction ids (``instructions_registry.INSTRUCTION_DICT`` at c94da02)."""
