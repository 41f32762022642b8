"""The master-key guard: completions that fool judges never reach one.

LLM judges are known to accept contentless replies ("One Token to Fool LLM-as-a-Judge",
Zhao et al. 2025): an empty answer, a lone colon, or a generic opener such as "Thought
process:", "Let's solve this problem step by step.", "Solution", "解", "かいせつ" or
"Respuesta" earn "YES" far too often. Such completions score 0 with status `ok` (they were
judged: by a rule) and `detail.guard` names the rule that fired.

A completion is a master key when, once normalised, nothing is left but openers: case,
punctuation, apostrophes, dashes ("step-by-step"), markdown and LaTeX formatting, list
markers ("1.", "-") and the numbers of numbered headings ("Solution 1:", "Step 2.", "Step
1.1:") are dropped first, and any sequence of openers ("Thought process: Let's think step by
step.") counts. Openers cover 17 languages; a spec adds its own with `guard_openers`.

The completion is checked as a reader reads it (`as_read`: invisible and format characters
gone, fillers blank, look-alike letters Latin, letters drawn as punctuation ("ː", "ꓸ")
punctuation, combining marks on no letter dropped), and as written (invisible characters as
spaces): a master key in either reading is one, so neither "Sol\u200bution:" nor
"Answer\u200bSolution" reaches the judge.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import regex  # the standard `re` has no Unicode properties

from ..verifiers._words import as_read

__all__ = ["DEFAULT_OPENERS", "OPENERS", "Guard", "normalise"]

OPENERS: dict[str, tuple[str, ...]] = {
    "en": (
        "thought process",
        "thinking process",
        "my thought process",
        "thoughts",
        "thinking",
        "reasoning",
        "reasoning process",
        "my reasoning",
        "analysis",
        "let's solve this problem step by step",
        "let's solve this problem",
        "let's solve this step by step",
        "let's solve this",
        "let's solve it step by step",
        "let's think step by step",
        "let's think about this step by step",
        "let's think about this",
        "let's think",
        "let's work through this step by step",
        "let's work through this",
        "let's work this out step by step",
        "let's break this down",
        "let's break it down step by step",
        "let's break this down step by step",
        "let's analyze this",
        "let's analyze this problem",
        "let's start",
        "let's begin",
        "let's see",
        "let me think",
        "let me think step by step",
        "let me think about this",
        "let me solve this step by step",
        "let me solve this",
        "let me work through this",
        "to solve this problem",
        "to solve this",
        "step by step",
        "step by step solution",
        "step",
        "steps",
        "solution",
        "sol",
        "soln",
        "the solution",
        "the solution is",
        "here is the solution",
        "here's the solution",
        "here is my solution",
        "final solution",
        "answer",
        "ans",
        "the answer",
        "the answer is",
        "my answer",
        "my answer is",
        "here is the answer",
        "here is my answer",
        "final answer",
        "the final answer",
        "the final answer is",
        "response",
        "my response",
        "explanation",
        "sure",
        "sure here is the answer",
        "sure here is the solution",
        "okay",
        "ok",
        "alright",
        "of course",
        "certainly",
        "well",
        "hmm",
        "so",
        "therefore",
        "thus",
        "hence",
    ),
    "zh": (
        "解",
        "解答",
        "解析",
        "分析",
        "答",
        "答案",
        "答案是",
        "最终答案",
        "思考过程",
        "思考過程",
        "思路",
        "解题思路",
        "解题过程",
        "推理过程",
        "步骤",
        "第一步",
        "首先",
        "好的",
        "让我们一步一步地思考",
        "让我们一步一步地解决这个问题",
        "让我们一步一步解决这个问题",
        "让我们一步步来",
        "我们一步一步来解决这个问题",
        "讓我們一步一步地解決這個問題",
    ),
    "ja": (
        "かいせつ",
        "解説",
        "解答",
        "回答",
        "答え",
        "こたえ",
        "解き方",
        "考え方",
        "思考過程",
        "ステップバイステップで考えましょう",
        "順を追って考えましょう",
        "一歩ずつ考えましょう",
        "この問題を段階的に解いてみましょう",
    ),
    "ko": (
        "풀이",
        "해설",
        "정답",
        "답",
        "해답",
        "설명",
        "생각 과정",
        "사고 과정",
        "단계별로 풀어 봅시다",
        "단계별로 생각해 봅시다",
        "차근차근 풀어 봅시다",
        "이 문제를 단계별로 풀어 보겠습니다",
    ),
    "es": (
        "respuesta",
        "la respuesta",
        "la respuesta es",
        "respuesta final",
        "solución",
        "la solución",
        "explicación",
        "razonamiento",
        "proceso de pensamiento",
        "resolvamos este problema paso a paso",
        "resolvamos esto paso a paso",
        "pensemos paso a paso",
        "vamos a resolverlo paso a paso",
        "paso a paso",
        "paso",
    ),
    "fr": (
        "réponse",
        "la réponse",
        "la réponse est",
        "réponse finale",
        "solution",
        "la solution",
        "voici la solution",
        "explication",
        "raisonnement",
        "processus de réflexion",
        "résolvons ce problème étape par étape",
        "réfléchissons étape par étape",
        "étape par étape",
        "étape",
    ),
    "de": (
        "antwort",
        "die antwort",
        "die antwort ist",
        "endgültige antwort",
        "lösung",
        "die lösung",
        "hier ist die lösung",
        "lösungsweg",
        "erklärung",
        "begründung",
        "überlegung",
        "denkprozess",
        "lösen wir dieses problem schritt für schritt",
        "lass uns schritt für schritt denken",
        "denken wir schritt für schritt",
        "schritt für schritt",
        "schritt",
    ),
    "pt": (
        "resposta",
        "a resposta",
        "a resposta é",
        "resposta final",
        "solução",
        "a solução",
        "explicação",
        "raciocínio",
        "processo de pensamento",
        "vamos resolver este problema passo a passo",
        "vamos pensar passo a passo",
        "passo a passo",
        "passo",
    ),
    "it": (
        "risposta",
        "la risposta",
        "la risposta è",
        "risposta finale",
        "soluzione",
        "la soluzione",
        "spiegazione",
        "ragionamento",
        "processo di pensiero",
        "risolviamo questo problema passo dopo passo",
        "ragioniamo passo dopo passo",
        "pensiamo passo dopo passo",
        "passo dopo passo",
        "passo passo",
    ),
    "ru": (
        "ответ",
        "окончательный ответ",
        "итоговый ответ",
        "решение",
        "объяснение",
        "рассуждение",
        "ход мыслей",
        "давайте решим эту задачу шаг за шагом",
        "давайте подумаем шаг за шагом",
        "решим шаг за шагом",
        "шаг за шагом",
        "шаг",
    ),
    "ar": (
        "الحل",
        "الإجابة",
        "الجواب",
        "الإجابة النهائية",
        "الشرح",
        "التفسير",
        "خطوات الحل",
        "لنحل هذه المسألة خطوة بخطوة",
        "لنفكر خطوة بخطوة",
        "خطوة بخطوة",
    ),
    "hi": (
        "उत्तर",
        "अंतिम उत्तर",
        "हल",
        "समाधान",
        "व्याख्या",
        "स्पष्टीकरण",
        "विचार प्रक्रिया",
        "आइए इस समस्या को चरण दर चरण हल करें",
        "चरण दर चरण",
    ),
    "tr": (
        "cevap",
        "yanıt",
        "son cevap",
        "çözüm",
        "açıklama",
        "düşünce süreci",
        "bu problemi adım adım çözelim",
        "adım adım düşünelim",
        "adım adım",
        "adım",
    ),
    "vi": (
        "lời giải",
        "đáp án",
        "đáp án cuối cùng",
        "trả lời",
        "giải",
        "giải thích",
        "quá trình suy nghĩ",
        "hãy giải bài toán này từng bước",
        "hãy suy nghĩ từng bước",
        "từng bước một",
        "bước",
    ),
    "id": (
        "jawaban",
        "jawab",
        "jawaban akhir",
        "penyelesaian",
        "solusi",
        "penjelasan",
        "proses berpikir",
        "mari kita selesaikan masalah ini langkah demi langkah",
        "mari berpikir langkah demi langkah",
        "langkah demi langkah",
        "langkah",
    ),
    "nl": (
        "antwoord",
        "eindantwoord",
        "oplossing",
        "uitleg",
        "redenering",
        "denkproces",
        "laten we dit probleem stap voor stap oplossen",
        "laten we stap voor stap denken",
        "stap voor stap",
        "stap",
    ),
    "pl": (
        "odpowiedź",
        "ostateczna odpowiedź",
        "rozwiązanie",
        "wyjaśnienie",
        "rozumowanie",
        "proces myślowy",
        "rozwiążmy ten problem krok po kroku",
        "pomyślmy krok po kroku",
        "krok po kroku",
        "krok",
    ),
}
"""Bare openers per language (ISO 639-1), compared after normalisation."""

DEFAULT_OPENERS: tuple[str, ...] = tuple(o for group in OPENERS.values() for o in group)

_NUMBERED = (
    "step|steps|solution|method|approach|part|case|attempt|paso|solución|método|étape|"
    "méthode|schritt|lösung|methode|passo|soluzione|metodo|solução|шаг|решение|способ|adım|"
    "çözüm|bước|langkah|stap|krok|步骤|解法|方法"
)
_HEADING_NUMBER = re.compile(
    rf"\b({_NUMBERED})\s*+[#№(]?\s*+(?:\d++(?:\.\d++)*+|[ivx]{{1,4}})(?=\s*[:.)\-：])"
)
"""The number of a numbered heading ("Solution 1:", "Step (2).", "Step 100:", "Step 1.1:"):
only before its colon, period, parenthesis or dash, so "Solution 2" (an answer naming an
option) stays content. Blanks and digits are taken whole (possessive): two greedy runs split
a long run every way (quadratic: "step", 20,000 spaces)."""
_LIST_MARKER = re.compile(
    r"^[^\S\n]*(?:\(?\d{1,2}[.)、]|\(?[a-h][.)]|[-*+•])\s+(?=\S)", re.MULTILINE
)
_LATEX_FORMAT = re.compile(
    r"\\(?:text|textbf|textit|emph|mathbf|mathrm|boxed|fbox|underline|section\*?|"
    r"subsection\*?|item)\b"
)
_APOSTROPHES = re.compile(r"[’‘ʼ`´']")
_DASHES = re.compile(r"[\-‐‑‒–—―]")
_LET_US = re.compile(r"\blet us\b")
_IS_CONTRACTED = re.compile(
    r"\b(?:(here|there|that|what|where|who|it)[’‘ʼ`´']|(here|there|that|what))s\b"
)
""""here's" and "heres" (apostrophe dropped) read "here is": "Sure, here's the answer:" is
the listed "sure here is the answer"."""
_MARKS_ON_NOTHING = regex.compile(r"(?<![\p{L}\p{N}\p{M}])\p{M}+")
"""Combining marks on no letter or digit (a lone U+0301, a mark after ':'): nothing to read."""
_SPACE = re.compile(r"\s+")
_LATIN_OR_DIGIT = re.compile(r"[a-z0-9]")


def _strip_list_markers(text: str) -> str:
    """`text` without list markers: ``re.sub(r"(?m)^\\s*(?:marker)\\s+(?=\\S)", "", text)``.

    That regex, tried from every line start, ran its `\\s*` over all the blank lines after it
    (quadratic: 20,000 characters of blank lines took seconds). Here the marker is found from
    its own line start and the cut is widened back to where that regex started it: the first
    line start of the whitespace before the marker.
    """
    pieces, last = [], 0
    for match in _LIST_MARKER.finditer(text):
        start = match.start()
        blank = last + len(text[last:start].rstrip())  # where the whitespace before it begins
        if blank > 0 and text[blank - 1] != "\n":
            blank = text.index("\n", blank) + 1
        pieces.append(text[last:blank])
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces)


def normalise(text: str) -> str:
    """Lower case, no formatting, no punctuation, no heading numbers, single spaces."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.replace("i\u0307", "i").replace("ı", "i")  # Turkish İ and ı: one i
    text = _LATEX_FORMAT.sub(" ", text)
    text = _IS_CONTRACTED.sub(r"\1\2 is", text)
    text = _APOSTROPHES.sub("", text)
    text = _strip_list_markers(text)
    text = _HEADING_NUMBER.sub(r"\1", text)
    text = _DASHES.sub(" ", text)
    text = "".join(" " if unicodedata.category(c)[0] in "PSC" else c for c in text)
    text = _LET_US.sub("lets", text)
    return _SPACE.sub(" ", text).strip()


def _as_seen(text: str) -> str:
    """`text` as a reader sees it (`as_read`), without combining marks on no letter."""
    return _MARKS_ON_NOTHING.sub("", as_read(text))


def _is_punctuation_only(text: str) -> bool:
    return all(unicodedata.category(c)[0] in "PSZC" for c in text)


class Guard:
    """Decides whether a completion is a master key; `check` returns the rule or None."""

    def __init__(self, extra_openers: Iterable[str] = (), defaults: bool = True) -> None:
        openers = (*(DEFAULT_OPENERS if defaults else ()), *extra_openers)
        self.openers = frozenset(n for n in (normalise(o) for o in openers) if n)
        self._opener_lengths = sorted({len(o) for o in self.openers}, reverse=True)

    def _only_openers(self, text: str) -> bool:
        """Whether `text` is nothing but openers, one after another: after a space, or directly
        where either side is not a Latin letter or digit (CJK has no spaces; "ok"+"ay" must not
        make "okay").

        The language of ``(?:(?:opener|...)(?:\\s+|(?<=[^a-z0-9])|(?=[^a-z0-9])|$))+``
        (fullmatch), read left to right over the positions an opener can start at: that regex
        backtracks exponentially when it fails, where openers are made of openers
        ("adim adim", "passo passo": 14 of them then a word took 5 s).
        """
        n = len(text)
        reachable = [False] * (n + 1)
        reachable[0] = bool(self.openers)
        for start in range(n):
            if not reachable[start]:
                continue
            for length in self._opener_lengths:
                end = start + length
                if end > n or text[start:end] not in self.openers:
                    continue
                if end == n:
                    return True
                after = _SPACE.match(text, end)
                if after is not None:
                    if after.end() == n:
                        return True
                    reachable[after.end()] = True
                if not _LATIN_OR_DIGIT.match(text, end - 1) or not _LATIN_OR_DIGIT.match(text, end):
                    reachable[end] = True
        return False

    def check(self, text: str) -> str | None:
        """`empty`, `punctuation_only`, `generic_opener`, or None when the text may be judged:
        the rule that fires on the text as seen (`_as_seen`), else on the text as written."""
        return self._rule(_as_seen(text)) or self._rule(text)

    def _rule(self, text: str) -> str | None:
        """The rule that fires on one reading of the text, or None."""
        if not text.strip():
            return "empty"
        if _is_punctuation_only(text):
            return "punctuation_only"
        normal = normalise(text)
        if not normal:
            return "punctuation_only"  # only formatting: markup, list markers, LaTeX wrappers
        if self._only_openers(normal):
            return "generic_opener"
        return None
