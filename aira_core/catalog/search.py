"""Capability search: the hybrid retrieval pipeline of RFC-0002 §8.2.

A :class:`SearchIndex` is built once per catalog (it never changes a descriptor) and answers
:class:`~aira_core.contracts.search.SearchRequest` with at most ``topK`` hits, whatever the
catalog's size. The stages, each a function or method below:

1. **Normalisation** (:func:`normalize`): terms (English stemmed, Chinese as character
   unigrams and bigrams), quantities with units (``2 mm``, ``M3``, ``Ø6``, ``30°``,
   ``3 毫米``) and counts (``500 pieces``, ``12个``), negated terms ("without holes",
   "not a chamfer", "不要倒角"); the raw intent is kept.
2. **Routing** (:meth:`SearchIndex._route`): the top-level branch from the intent's cue
   words ("how many" → query, "must" → validation, "export" → io.export …), then the
   taxonomy leaves that hold most of the candidates' relevance.
3. **Candidates** from parallel retrievers: BM25 (``bm25s``) over titles, summaries,
   aliases, intent examples and input names; exact alias matches; the nearest intent
   examples; and a dense retriever behind the :class:`Embedder` protocol (by default
   :class:`HashingEmbedder`, character n-grams, no model needed; ``aira-core[embeddings]``
   adds an offline sentence-embedding model).
4. **Typed filtering** by kind, risk, cost, known input and desired output types,
   representation and selection cardinality.
5. **State applicability** from the runtime snapshot, the Session Grant and the revision.
6. **Reranking** by relevance, coverage of the desired outputs, risk, quality, cost and
   diversity; counterexamples and negated terms push a capability down.
7. **Sufficiency**: can the hits take the known inputs to the desired outputs through
   ``produces``/``accepts``? If not, producers of the missing types are added or the gap is
   reported; and when nothing matches well the answer is an explicit "no match".
"""

from __future__ import annotations

import functools
import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aira_core.canonical import canonical_bytes, sha256_bytes_hex, sha256_hex
from aira_core.catalog.policy import RISK_RANK, authorize
from aira_core.contracts.capability import (
    WRITING_KINDS,
    Applicability,
    Authorization,
    CapabilityDescriptor,
    CapabilityKind,
    ComponentStatus,
    CostClass,
    ExecutionQuality,
    RuntimeCapabilitySnapshot,
    SessionGrant,
)
from aira_core.contracts.search import (
    MAX_TOP_K,
    NormalizedIntent,
    Quantity,
    SearchHit,
    SearchRequest,
    SearchResponse,
    Sufficiency,
)

MAX_RESPONSE_BYTES = 64 * 1024
"""The server's own limit on a search response (canonical JSON), whatever a client asks."""
CANDIDATES_PER_RETRIEVER = 50
NO_MATCH_DEPTH = 3
"""The best evidence among this many top-ranked candidates decides "no match"."""
MAX_PER_BRANCH = 3
EXAMPLE_TERM_SHARE = 0.65
"""What a term found only in a capability's intent examples earns of its weight in coverage:
examples show a capability in context ("load the vendor's CAD file (STEP)"), and their
context words (vendor, bracket) say less about what it does than its title, aliases and
summary."""


@dataclass(frozen=True)
class Weights:
    """How the signals combine. Two numbers come out for each candidate:

    - the **rank** (order of the hits): BM25 relative to the best candidate, the share of the
      intent a matched alias explains, the nearest intent example, term coverage and the
      dense retriever; pushed down by a closer counterexample than example and by negated
      terms; moved by the routed branch;
    - the **evidence** (reported as ``retrievalRelevance``): term coverage, the nearest
      intent example (a sentence; a bare title or alias matching one word of a longer intent
      is coverage already, and would otherwise vouch for "translate this manual into
      French") and alias share (and, with a sentence-embedding model, its nearest intent example),
      which is absolute, so that a best evidence below ``no_match_below`` answers "no match".

    Fitted on the odd-numbered half of the discovery benchmark (benchmarks/discovery); the
    even half is held out (see benchmarks/README.md for both halves' numbers)."""

    bm25: float
    alias: float
    example: float
    lexical: float
    dense: float
    model_example: float
    counter: float
    model_counter: float
    cue_boost: float
    off_cue: float
    evidence_lexical: float
    evidence_alias: float
    evidence_model: float
    no_match_below: float


DEFAULT_WEIGHTS = Weights(
    bm25=0.176,
    alias=0.16,
    example=0.749,
    lexical=0.91,
    dense=0.925,
    model_example=0.0,
    counter=3.467,
    model_counter=0.0,
    cue_boost=1.119,
    off_cue=0.803,
    evidence_lexical=0.55,
    evidence_alias=0.026,
    evidence_model=0.0,
    no_match_below=0.19,
)
MODEL_WEIGHTS = Weights(
    bm25=0.739,
    alias=0.003,
    example=0.617,
    lexical=0.832,
    dense=0.867,
    model_example=1.539,
    counter=1.676,
    model_counter=2.816,
    cue_boost=1.421,
    off_cue=0.532,
    evidence_lexical=0.431,
    evidence_alias=0.173,
    evidence_model=0.643,
    no_match_below=0.324,
)
"""Hits from one taxonomy leaf before the others get a turn (diversity)."""

_COST_RANK = {c: i for i, c in enumerate(CostClass)}

# -- stage 1: normalisation ---------------------------------------------------------------------

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[a-z][a-z0-9]*|[{_CJK}]+")
_STOPWORD_TEXT = """
    a an the of to in on at by for from with into onto and or is are be it its this that
    these those i me my we our you your he she they them please can could would should will
    shall do does did make makes made give get let want need some any all one as so up
    just then than also very using use via per each both mm cm m deg degree degrees"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_CJK_STOP = frozenset("的了个把将请我给吗呢吧一和与在是要这那么每各")

_NUMBER = r"(\d+(?:\.\d+)?)"
_UNITS = {
    "mm": ("mm", 1.0, "Length"),
    "millimeter": ("mm", 1.0, "Length"),
    "millimetre": ("mm", 1.0, "Length"),
    "毫米": ("mm", 1.0, "Length"),
    "cm": ("cm", 10.0, "Length"),
    "centimeter": ("cm", 10.0, "Length"),
    "centimetre": ("cm", 10.0, "Length"),
    "厘米": ("cm", 10.0, "Length"),
    "公分": ("cm", 10.0, "Length"),
    "m": ("m", 1000.0, "Length"),
    "meter": ("m", 1000.0, "Length"),
    "metre": ("m", 1000.0, "Length"),
    "米": ("m", 1000.0, "Length"),
    "in": ("in", 25.4, "Length"),
    "inch": ("in", 25.4, "Length"),
    "英寸": ("in", 25.4, "Length"),
    "°": ("deg", 1.0, "Angle"),
    "deg": ("deg", 1.0, "Angle"),
    "degree": ("deg", 1.0, "Angle"),
    "度": ("deg", 1.0, "Angle"),
    "cm³": ("cm3", 1000.0, "Volume"),
    "cm3": ("cm3", 1000.0, "Volume"),
    "mm³": ("mm3", 1.0, "Volume"),
    "mm3": ("mm3", 1.0, "Volume"),
    "立方厘米": ("cm3", 1000.0, "Volume"),
    # counting words: "500 pieces", "12个" are a count, not content to match ("件" is also
    # the second half of 文件, "file")
    "pcs": ("count", 1.0, "Count"),
    "piece": ("count", 1.0, "Count"),
    "个": ("count", 1.0, "Count"),
    "件": ("count", 1.0, "Count"),
    "只": ("count", 1.0, "Count"),
}
_UNIT_WORD = "|".join(
    sorted(
        (re.escape(u) + ("s?" if u.isascii() and u.isalpha() else "") for u in _UNITS),
        key=len,
        reverse=True,
    )
)
_QUANTITY = re.compile(rf"{_NUMBER}\s*(?P<unit>{_UNIT_WORD})(?![a-z])", re.IGNORECASE)
_THREAD = re.compile(rf"(?<![a-z0-9])m{_NUMBER}(?![a-z0-9.])", re.IGNORECASE)
_DIAMETER = re.compile(rf"(?:[øØ⌀Φφ]|\bdia(?:meter)?\.?\s*){_NUMBER}", re.IGNORECASE)
_RADIUS = re.compile(rf"(?<![a-z0-9])r{_NUMBER}(?![a-z0-9.])", re.IGNORECASE)
# a drawing's chamfer callout: C1 is a 1 mm x 45° chamfer ("两端各倒C1角", "C0.5 on the edge")
_CHAMFER = re.compile(rf"(?<![a-z0-9])c{_NUMBER}(?![a-z0-9.])", re.IGNORECASE)
_CODES = ((_DIAMETER, "diameter"), (_THREAD, "thread"), (_RADIUS, "radius"), (_CHAMFER, "chamfer"))
_ROLE_TERMS = {
    "thread": ("hole", "screw"),
    "diameter": ("diameter",),
    "radius": ("radius",),
    "chamfer": ("chamfer",),
}

# Ruling something out ("without holes", "not a chamfer", "don't round them"), as opposed to
# stating a requirement ("must not overlap", "does not collide", "no taller than 20 mm"),
# which is what a validator checks and must stay searchable.
_NEGATION_EN = re.compile(
    r"(?<!must )(?<!should )(?<!shall )(?<!may )(?<!can )(?<!will )(?<!could )"
    r"(?<!does )(?<!is )(?<!are )(?<!did )(?<!it's )"
    r"\b(?:without|not|no|except|excluding|instead of|rather than|don'?t|do not|avoid)"
    r"\s+(?!(?:[a-z]+er|more|less|bigger|smaller|wider|taller|thicker|longer)\s+than\b)"
    r"((?:[a-z]+\s*){1,3})",
    re.IGNORECASE,
)
_NEGATION_ZH = re.compile(rf"(?:不要|不需要|不用|无需|别|不是|并非|而不是|不想)([{_CJK}]{{1,4}})")
_FILLER_TEXT = "a an the any want to need be it something just me this that please"
_NEGATION_FILLER = frozenset(_FILLER_TEXT.split())

# Cue words that route an intent to a top-level taxonomy branch (any language).
_CUE_TEXT = {
    "query": "how many|how much|how far|how big|how large|how heavy|how long|how thick|"
    "what is|what's|what are|which|measure|list|count|tell me|report|find out|show me|"
    "多少|几个|哪些|哪个|测量|查询|列出|多大|多远|多重|多厚|统计",
    "validation": "must|check|verify|ensure|make sure|at least|at most|no more than|"
    "no less than|should not|shall|may not|confirm|必须|检查|校验|确保|验证|不超过|至少|不能|"
    "不得|不小于|不大于|确认",
    "io.export": "export|save as|write out|download|output as|导出|保存为|另存|输出为",
    "io.import": "import|load|read in|open the file|导入|读取|加载|读入",
}
_CUES = {branch: tuple(text.split("|")) for branch, text in _CUE_TEXT.items()}
# An English cue is a word (or phrase) with its inflections, never part of a longer word:
# "count" is no cue in "counterbored", "load" none in "download", "import" none in
# "important". Chinese cues are substrings (no spaces to bound them).
_CUE_PATTERNS = {
    branch: tuple(
        re.compile(rf"\b{re.escape(cue)}(?:s|es|ed|d|ing|ment|ments)?\b" if cue.isascii() else cue)
        for cue in cues
    )
    for branch, cues in _CUES.items()
}


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: imported on first search, not at CLI start

    return Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


@dataclass(frozen=True)
class Operation:
    """A modelling operation an intent can ask for by name, which only a capability that
    performs it can answer: primitives matching the words around it ("a square", "a
    circle") are no answer to "loft between a square and a circle"."""

    name: str
    what: str
    asks: tuple[str, ...]
    """Phrases that ask for it; each matches when all of its words' terms are in the
    intent (English), or as a substring (Chinese)."""
    performs: tuple[str, ...]
    """Words one of which a capability that performs it has in its id or title (or, in
    Chinese, its aliases)."""


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "loft", "a solid blended between two or more profiles", ("loft", "放样"), ("loft", "放样")
    ),
    Operation(
        "sweep",
        "a profile swept along a path",
        ("sweep along", "sweep path", "扫掠", "沿路径"),
        ("sweep", "扫掠"),
    ),
    Operation("thread", "a helical thread", ("thread", "螺纹"), ("thread", "螺纹")),
    Operation(
        "helix",
        "a helix or a coil spring",
        ("helix", "helical", "coil spring", "螺旋", "弹簧"),
        ("helix", "helical", "螺旋"),
    ),
    Operation("gear", "gear teeth", ("gear", "齿轮"), ("gear", "齿轮")),
    Operation(
        "text",
        "engraved or embossed text",
        ("engrave", "emboss", "刻字", "浮雕"),
        ("text", "engrave", "emboss", "文字"),
    ),
    Operation("knurl", "a knurled surface", ("knurl", "滚花"), ("knurl", "滚花")),
    Operation(
        "draft",
        "a draft angle on faces (for moulding)",
        ("draft angle", "degree draft", "拔模"),
        ("draft", "拔模"),
    ),
)
"""Operations the host knows by name (English and Chinese). Whether the catalog performs
one is read from the capabilities themselves, so a package that adds a loft answers
"loft" from then on."""


def _is_cjk(text: str) -> bool:
    return bool(re.search(f"[{_CJK}]", text))


def _performs(d: CapabilityDescriptor, op: Operation) -> bool:
    """Whether ``d`` is a capability for ``op``: named for it in its id or title (aliases
    are loose: a revolve may be "swept around an axis"), or in a Chinese alias."""
    named = set(tokens(" ".join([d.title, d.capability_id.split(":")[-1].split("@")[0]])))
    for word in op.performs:
        if _is_cjk(word):
            if word in d.title or any(word in a for a in d.aliases):
                return True
        elif set(tokens(word)) <= named:
            return True
    return False


def tokens(text: str) -> list[str]:
    """Retrieval terms: English words lowercased, stopwords dropped, stemmed; Chinese runs
    as character unigrams (stopwords dropped) and bigrams."""
    out: list[str] = []
    for token in _TOKEN.findall(text.lower()):
        if token[0] >= "\u3400":
            out.extend(c for c in token if c not in _CJK_STOP)
            out.extend(token[i : i + 2] for i in range(len(token) - 1))
        elif token not in _STOPWORDS and len(token) > 1:
            out.append(_stem(token))
    return out


_CAPABILITY_ID = re.compile(r"^\s*(?:cap:)?([a-z][a-zA-Z0-9]*(?:\.[a-zA-Z0-9]+)+)(?:@[\d.]+)?\s*$")


def id_name(capability_id: str) -> str:
    """The words a capability's id names it by: ``cap:exact.reduceFilletRadius@1`` →
    ``reduce fillet radius``."""
    last = capability_id.split(":")[-1].split("@")[0].split(".")[-1]
    return re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", last).lower()


def name_key(text: str) -> tuple[Any, ...]:
    """What two names share when they name the same thing: an English name's terms and
    negated terms as sorted sets (``Fillet edges`` and ``edges fillet`` alike; quantities
    and stopwords left out, so ``translate 5 mm`` is named ``translate``; ``no
    interference`` keeps its negation), a Chinese name as written without spaces or
    punctuation. A capability id (``cap:exact.translate@1``, ``exact.translate``) keys as
    its dotted words."""
    found = _CAPABILITY_ID.match(text)
    if found:
        text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", found.group(1).replace(".", " "))
    if re.search(f"[{_CJK}]", text):
        return ("zh", re.sub(r"[\s\W_]+", "", text.lower()))
    norm = normalize(text)
    return (tuple(sorted(set(norm.terms))), tuple(sorted(set(norm.negated))))


def _quantities(text: str) -> tuple[list[Quantity], str]:
    """Quantities in ``text`` and the text with them blanked out."""
    found: list[Quantity] = []
    spans: list[tuple[int, int]] = []
    codes: set[tuple[int, int]] = set()
    for pattern, role in _CODES:
        for m in pattern.finditer(text):
            if any(a <= m.start() < b for a, b in spans):
                continue
            found.append(
                Quantity(
                    text=m.group(0),
                    value=float(m.group(1)),
                    unit="mm",
                    dimension="Length",
                    role=role,
                )
            )
            spans.append(m.span())
            codes.add(m.span())
    for m in _QUANTITY.finditer(text):
        if any(a <= m.start() < b for a, b in spans):
            continue
        key = m.group("unit").lower()
        key = key if key in _UNITS else key.rstrip("s")
        unit, factor, dimension = _UNITS[key]
        found.append(
            Quantity(
                text=m.group(0), value=float(m.group(1)) * factor, unit=unit, dimension=dimension
            )
        )
        spans.append(m.span())
    blanked = text
    for a, b in sorted(spans, reverse=True):
        # a callout is written inside the word it sizes (倒R2圆角, 倒C1角): the word closes up
        # around it; any other quantity parts words
        inside = (a, b) in codes and _is_cjk(blanked[a - 1 : a]) and _is_cjk(blanked[b : b + 1])
        blanked = blanked[:a] + ("" if inside else " ") + blanked[b:]
    return found, blanked


def _negations(text: str) -> tuple[list[str], str]:
    """Negated terms and ``text`` without the negated phrases."""
    negated: list[str] = []
    spans: list[tuple[int, int]] = []
    for m in _NEGATION_EN.finditer(text):
        words = [w for w in m.group(1).lower().split() if w not in _NEGATION_FILLER]
        if words:
            negated.extend(tokens(" ".join(words[:2])))
            spans.append(m.span())
    for m in _NEGATION_ZH.finditer(text):
        span = m.group(1)
        negated.extend(span[i : i + 2] for i in range(len(span) - 1))
        spans.append(m.span())
    kept = text
    for a, b in sorted(spans, reverse=True):
        kept = kept[:a] + " " + kept[b:]
    return list(dict.fromkeys(negated)), kept


def _cued_branches(text: str) -> list[str]:
    lowered = text.lower()
    scores = {
        branch: sum(1 for cue in cues if cue.search(lowered))
        for branch, cues in _CUE_PATTERNS.items()
    }
    return [b for b, s in sorted(scores.items(), key=lambda kv: -kv[1]) if s > 0]


@dataclass(frozen=True)
class Normalized:
    """The intent as the retrievers see it."""

    raw: str
    text: str
    """The raw text without quantities and negated phrases: what is matched."""
    terms: tuple[str, ...]
    negated: tuple[str, ...]
    quantities: tuple[Quantity, ...]
    cues: tuple[str, ...]


def normalize(intent: str) -> Normalized:
    """Stage 1: terms, quantities with units, negations and routing cues of an intent."""
    raw = intent
    text = " ".join(intent.split())
    cues = _cued_branches(text)
    negated, text = _negations(text)
    quantities, text = _quantities(text)
    terms = tokens(text)
    for q in quantities:
        terms.extend(_ROLE_TERMS.get(q.role or "", ()))
    return Normalized(raw, text, tuple(terms), tuple(negated), tuple(quantities), tuple(cues))


# -- whole parts: the intent's clauses ----------------------------------------------------------

# Where one feature of a described part ends and the next begins: clause punctuation (a full
# stop only before a space or the end, not in 6.5) and the words that join the features of
# a part ("a plate with two holes and rounded corners", "底板，四角打孔，竖边倒圆角"); not
# "but" or "rather than", which correct the clause they are in.
_CLAUSE = re.compile(
    r"[,;:!?()\[\]\n，。；：！？、（）]|\.(?=\s|$)"
    r"|\b(?:with|and|plus|then|having|featuring|including|also)\b"
    r"|并且|然后|以及|同时|另外|其中",
    re.IGNORECASE,
)
MAX_CLAUSES = 12
NAMED_RELEVANCE = 0.9
"""The least retrievalRelevance of a capability the whole intent names: what its name
explains of the intent is all of it."""
FEATURE_TIE = 0.85
"""Candidates of a clause ranked this close to its best are near-ties: the one with the
strongest evidence is the clause's feature."""
FEATURE_AFTER = 0.5
"""A clause's further features ("a hollow box": the shell, then the box) are ranked at
least this share of its best and named by an alias of their own."""
FEATURE_ALIAS_EVIDENCE = 0.5
"""The share of the no-match threshold a feature needs when the clause names it by an alias
("each leg has a 4.2 mm hole in its middle"): the clause's other words (where, how many)
only dilute the evidence of what it names."""
"""Clauses of one intent searched as features (the rest stay part of the whole intent)."""


def clauses(intent: str) -> list[str]:
    """The clauses of an intent (see :data:`_CLAUSE`) that hold a word or a Chinese
    character: each is searched on its own as one feature of a described part."""
    parts = (" ".join(p.split()) for p in _CLAUSE.split(intent))
    return [p for p in parts if re.search(rf"[a-zA-Z]{{2}}|[{_CJK}]", p)][:MAX_CLAUSES]


# -- the dense retriever ------------------------------------------------------------------------


class Embedder(Protocol):
    """Turns texts into L2-normalised row vectors (a numpy array or a scipy sparse matrix);
    the similarity of two texts is the dot product of their rows."""

    name: str

    def embed(self, texts: Sequence[str]) -> Any: ...


@functools.lru_cache(maxsize=200_000)
def _token_features(token: str, dimensions: int) -> tuple[tuple[int, float], ...]:
    """The hashed features of one token (cached: a catalog repeats its words a lot)."""
    out: list[tuple[int, float]] = []

    def add(feature: str, weight: float) -> None:
        out.append((zlib.crc32(feature.encode()) % dimensions, weight))

    if token[0] >= "\u3400":
        for c in token:
            if c not in _CJK_STOP:
                add(c, 0.5)
        for i in range(len(token) - 1):
            add(token[i : i + 2], 1.0)
    elif token not in _STOPWORDS and len(token) > 1:
        add("w:" + _stem(token), 1.0)
        padded = f"<{token}>"
        for i in range(len(padded) - 2):
            add(padded[i : i + 3], 0.25)
    return tuple(out)


class HashingEmbedder:
    """The default dense retriever: words (stemmed), character trigrams of each English word
    and Chinese unigrams and bigrams, hashed (CRC-32, stable across processes) into a sparse
    2¹⁸-dimensional vector with sublinear term frequency. Needs no model, so it works
    everywhere; it catches morphology, typos and word order a bag of words misses."""

    name = "hashing-ngrams"
    dimensions = 1 << 18

    def _features(self, text: str) -> dict[int, float]:
        counts: dict[int, float] = {}
        for token in _TOKEN.findall(text.lower()):
            for key, weight in _token_features(token, self.dimensions):
                counts[key] = counts.get(key, 0.0) + weight
        return counts

    version = "1"
    """Bumped when the features change (cached indexes of another version are rebuilt)."""

    def _weighted(self, text: str) -> dict[int, float]:
        features = self._features(text)
        norm = math.sqrt(sum((1 + math.log(v)) ** 2 for v in features.values())) or 1.0
        return {key: (1 + math.log(v)) / norm for key, v in features.items()}

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np
        from scipy.sparse import csr_matrix

        rows, cols, values = [], [], []
        for r, text in enumerate(texts):
            for key, v in self._weighted(text).items():
                rows.append(r)
                cols.append(key)
                values.append(v)
        return csr_matrix(
            (np.asarray(values, dtype=np.float32), (rows, cols)),
            shape=(len(texts), self.dimensions),
        )

    def embed_one(self, text: str) -> _SparseRow:
        """The row of one text as :meth:`embed` makes it, without scipy (a query must not
        pay for importing it)."""
        import numpy as np

        weighted = self._weighted(text)
        keys = sorted(weighted)
        return _SparseRow(
            np.asarray(keys, dtype=np.int64),
            np.asarray([weighted[k] for k in keys], dtype=np.float32),
        )


EMBEDDER_ENV = "AIRA_EMBEDDER"
EMBEDDER_UNKNOWN = "EMBEDDER_UNKNOWN"
EMBEDDER_UNAVAILABLE = "EMBEDDER_UNAVAILABLE"


def configured_embedder() -> Embedder:
    """The dense retriever catalog search uses, in the CLI and in a task alike.

    ``$AIRA_EMBEDDER`` chooses it: ``hashing`` (:class:`HashingEmbedder`), the sentence
    model's name (``use-multilingual-v3``, needs ``aira-core[embeddings]``), or ``auto`` /
    unset: the sentence model when the extra is installed, else hashing."""
    import os

    from aira_core.catalog import embeddings
    from aira_core.diagnostics import AiraError

    choice = os.environ.get(EMBEDDER_ENV, "").strip() or "auto"
    if choice in ("hashing", HashingEmbedder.name):
        return HashingEmbedder()
    if choice not in ("auto", embeddings.MODEL_NAME):
        raise AiraError(
            EMBEDDER_UNKNOWN,
            f"{EMBEDDER_ENV}={choice!r} names no embedder; use auto, hashing or "
            f"{embeddings.MODEL_NAME}",
        )
    model = embeddings.load()
    if model is not None:
        return model
    if choice == "auto":
        return HashingEmbedder()
    raise AiraError(
        EMBEDDER_UNAVAILABLE,
        f"{EMBEDDER_ENV}={choice} needs the sentence-embedding model: "
        "pip install 'aira-core[embeddings]'",
    )


def embedder_identity(embedder: Embedder) -> str | None:
    """Name, version and width of an embedder, or None when it declares no ``version``
    (then nothing built with it is cached: a change could not be told)."""
    version = getattr(embedder, "version", None)
    if not isinstance(version, str):
        return None
    return f"{embedder.name}/{version}/{getattr(embedder, 'dimensions', '?')}"


@dataclass(frozen=True)
class _SparseRow:
    """One sparse query vector: its column indices (ascending) and values."""

    indices: Any
    values: Any


def _query_row(query: Any) -> Any:
    """A query vector as :class:`_SparseRow` (sparse) or a flat numpy array (dense)."""
    import numpy as np

    if isinstance(query, _SparseRow):
        return query
    if hasattr(query, "tocsr"):  # a scipy matrix from a custom embedder
        q = query.tocsr()
        q.sort_indices()
        return _SparseRow(q.indices.astype(np.int64), q.data.astype(np.float32))
    return np.asarray(query, dtype=np.float32).reshape(-1)


class _Matrix:
    """Rows of L2-normalised vectors, laid out for one query at a time: a sparse matrix is
    kept by column (CSC arrays), so a sparse query only touches the columns it has. Plain
    numpy arrays, so that an index read from the cache needs neither scipy nor bm25s."""

    def __init__(self, arrays: Mapping[str, Any]) -> None:
        self.arrays = dict(arrays)
        self.sparse = "indptr" in self.arrays

    @classmethod
    def of(cls, rows: Any) -> _Matrix:
        import numpy as np

        if hasattr(rows, "tocsc"):
            csc = rows.tocsc()
            csc.sort_indices()
            return cls(
                {
                    "data": np.asarray(csc.data, dtype=np.float32),
                    "indices": np.asarray(csc.indices, dtype=np.int64),
                    "indptr": np.asarray(csc.indptr, dtype=np.int64),
                    "shape": np.asarray(csc.shape, dtype=np.int64),
                }
            )
        return cls({"rows": np.ascontiguousarray(rows, dtype=np.float32)})

    @property
    def n_rows(self) -> int:
        return int(self.arrays["shape"][0] if self.sparse else self.arrays["rows"].shape[0])

    def similarities(self, query: Any) -> Any:
        import numpy as np

        q = _query_row(query)
        if not self.sparse:
            dense = q if not isinstance(q, _SparseRow) else self._densify(q)
            return np.asarray(self.arrays["rows"] @ dense, dtype=np.float32).ravel()
        if not isinstance(q, _SparseRow):
            nz = np.flatnonzero(q)
            q = _SparseRow(nz.astype(np.int64), q[nz].astype(np.float32))
        data, indices, indptr = (self.arrays[k] for k in ("data", "indices", "indptr"))
        out = np.zeros(self.n_rows, dtype=np.float32)
        starts, ends = indptr[q.indices], indptr[q.indices + 1]
        if len(starts):
            # column by column, each column's rows in order: the additions scipy's CSC
            # product makes, in the same order (so the same float32 sums)
            take = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends, strict=True)])
            counts = ends - starts
            np.add.at(out, indices[take], data[take] * np.repeat(q.values, counts))
        return out

    def _densify(self, q: _SparseRow) -> Any:
        import numpy as np

        dense = np.zeros(self.arrays["rows"].shape[1], dtype=np.float32)
        dense[q.indices] = q.values
        return dense


class _Bm25:
    """BM25 scores of every term in every document (``bm25s``'s eager index, as arrays):
    building needs ``bm25s``, answering a query needs numpy only."""

    def __init__(self, arrays: Mapping[str, Any], vocab: Mapping[str, int]) -> None:
        self.arrays = dict(arrays)
        self.vocab = dict(vocab)

    @classmethod
    def build(cls, documents: list[list[str]]) -> _Bm25:
        import bm25s
        import numpy as np

        bm25 = bm25s.BM25()
        bm25.index(documents, show_progress=False)
        arrays = {k: np.asarray(bm25.scores[k]) for k in ("data", "indices", "indptr")}
        arrays["num_docs"] = np.asarray([bm25.scores["num_docs"]], dtype=np.int64)
        if bm25.nonoccurrence_array is not None:
            arrays["nonoccurrence"] = np.asarray(bm25.nonoccurrence_array)
        return cls(arrays, bm25.vocab_dict)

    def scores(self, terms: Sequence[str]) -> Any:
        """As ``bm25s.BM25.get_scores``: the columns of the known terms summed, in order."""
        import numpy as np

        data, indices, indptr = (self.arrays[k] for k in ("data", "indices", "indptr"))
        columns = len(indptr) - 1
        ids = np.asarray(
            [self.vocab[t] for t in terms if self.vocab.get(t, columns) < columns], dtype=np.int64
        )
        out = np.zeros(int(self.arrays["num_docs"][0]), dtype=data.dtype)
        for start, end in zip(indptr[ids], indptr[ids + 1], strict=True):
            np.add.at(out, indices[start:end], data[start:end])
        if "nonoccurrence" in self.arrays:
            out += self.arrays["nonoccurrence"][ids].sum()
        return out


INDEX_FORMAT = "aira.search-index/1"


@functools.lru_cache(maxsize=1)
def _code_hash() -> str:
    """This module's source: what the index is built by (an edited checkout rebuilds)."""
    from pathlib import Path

    try:
        return sha256_bytes_hex(Path(__file__).read_bytes())
    except OSError:
        return "unreadable"


class IndexCache(Protocol):
    """Where built indexes are kept (:mod:`aira_core.catalog.search_cache`): ``load`` gives
    the arrays and metadata stored under a key, or None; ``save`` stores them."""

    def load(self, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None: ...

    def save(self, key: str, arrays: Mapping[str, Any], meta: Mapping[str, Any]) -> None: ...


# -- the index ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchConfig:
    """Which retrievers and stages run: :data:`HYBRID` by default; :data:`BM25_ONLY` is the
    comparison baseline of the discovery benchmark."""

    name: str = "hybrid"
    bm25: bool = True
    aliases: bool = True
    examples: bool = True
    dense: bool = True
    routing: bool = True
    penalties: bool = True
    """Counterexamples and negated terms push capabilities down."""


HYBRID = SearchConfig()
BM25_ONLY = SearchConfig(
    name="bm25", aliases=False, examples=False, dense=False, routing=False, penalties=False
)


@dataclass
class SearchContext:
    """What applicability and authorization are computed against; any part may be absent
    (then ``runtimeApplicability`` says ``unknown`` for what it cannot decide)."""

    snapshot: RuntimeCapabilitySnapshot | None = None
    grant: SessionGrant | None = None
    revision_types: frozenset[str] | None = None
    """Semantic types present in the revision (e.g. ``ExactSolid`` when it has bodies)."""
    selection_count: int | None = None


@dataclass
class _Capability:
    descriptor: CapabilityDescriptor
    input_names: frozenset[str]
    identity: frozenset[str]
    """Terms of the title, aliases and id: what a negation rules out."""
    accepts: frozenset[str]
    produces: frozenset[str]
    composes: tuple[str, ...]
    """Capability ids it ``composesWith`` (a box with a fillet, a cylinder with a cut), in the
    order the relation lists them: the first is the likeliest partner, and a set's order
    would be the hash seed's (one search answering differently in two processes)."""
    ref: str
    leaf: str
    top: str


@dataclass
class _Candidate:
    index: int
    lexical: float = 0.0
    bm25: float = 0.0
    example: float = 0.0
    dense: float = 0.0
    alias: float = 0.0
    alias_terms: frozenset[str] = frozenset()
    counter: float = 0.0
    model_example: float = 0.0
    model_counter: float = 0.0
    sentence: float = 0.0
    model_sentence: float = 0.0
    rank: float = 0.0
    relevance: float = 0.0
    why: list[str] = field(default_factory=list)


def _dense_text(d: CapabilityDescriptor) -> str:
    return " ".join([f"{d.title}.", d.summary, *d.aliases, *d.intent_examples])


def _top(path: str) -> str:
    return (
        "io.import"
        if path.startswith("io.import")
        else ("io.export" if path.startswith("io.export") else path.split(".")[0])
    )


_SHAPES = frozenset({"ExactSolid", "Profile"})
"""What operations that make shapes produce."""


@dataclass
class _Part:
    """An intent read as a whole part (:meth:`SearchIndex._part`)."""

    features: list[tuple[str, _Candidate]]
    """(clause, candidate), the strongest evidence first."""
    rest: dict[int, tuple[float, _Candidate]]
    """Every other candidate: the best share of the top rank it reached in a clause or in
    the whole intent, with its scores there."""
    unknown: list[str]
    """Clauses that named no capability and hold a word the catalog does not know."""
    lead: _Candidate | None
    """The whole intent's best candidate when its evidence reaches the threshold."""
    cues: tuple[str, ...]
    """The whole intent's cued branches."""


class SearchIndex:
    """A catalog prepared for :meth:`search`: built once, read-only afterwards."""

    def __init__(
        self,
        descriptors: Iterable[CapabilityDescriptor],
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        config: SearchConfig = HYBRID,
        embedder: Embedder | None = None,
        cache: IndexCache | None = None,
    ) -> None:
        import numpy as np

        self.config = config
        self.caps: list[_Capability] = []
        documents: list[list[str]] = []
        examples: list[str] = []
        example_owner: list[int] = []
        counters: list[str] = []
        counter_owner: list[int] = []
        self._aliases: dict[tuple[str, ...], set[int]] = {}
        self._cjk_aliases: dict[str, set[int]] = {}
        self._names: dict[tuple[Any, ...], list[tuple[int, int, str]]] = {}
        """A whole name (:func:`name_key`) → (precedence, capability, the name as written):
        its id's words first (0: ``translate``, ``exact translate``), then its title (1),
        then its aliases (2)."""
        self._described: list[frozenset[str]] = []
        """Per capability, the terms of what it says it is (title, aliases, id, summary, input
        names); the other terms of its text occur only in its intent examples."""
        self._sentence_rows: list[tuple[int, int]] = []
        for i, d in enumerate(descriptors):
            schema = (schemas or {}).get(d.inputs.schema_ref) or {}
            names = frozenset(str(n) for n in (schema.get("properties") or {}))
            relations = {k.value: v for k, v in d.relations.items()}
            identity = frozenset(
                tokens(
                    " ".join(
                        [d.title, *d.aliases, d.capability_id.split(":")[-1].replace(".", " ")]
                    )
                )
            )
            self.caps.append(
                _Capability(
                    descriptor=d,
                    input_names=names,
                    identity=identity,
                    accepts=frozenset(relations.get("accepts", [])),
                    produces=frozenset(
                        relations.get("produces", [])
                        or (d.outputs.semantic_types if d.outputs else [])
                    ),
                    composes=tuple(dict.fromkeys(relations.get("composesWith", []))),
                    ref=d.target[1],
                    leaf=d.taxonomy.primary.value,
                    top=_top(d.taxonomy.primary.value),
                )
            )
            name_words = " ".join(re.sub(r"([a-z])([A-Z])", r"\1 \2", n) for n in names)
            self._described.append(identity | frozenset(tokens(" ".join([d.summary, name_words]))))
            documents.append(
                tokens(
                    " ".join(
                        [
                            d.title,
                            d.title,
                            *d.aliases,
                            *d.aliases,
                            d.summary,
                            *d.intent_examples,
                            name_words,
                            d.capability_id.split(":")[-1].split("@")[0].replace(".", " "),
                        ]
                    )
                )
            )
            # rows of this capability's examples: its intent examples (sentences) first
            self._sentence_rows.append((len(examples), len(examples) + len(d.intent_examples)))
            for example in [*d.intent_examples, d.title, *d.aliases]:
                examples.append(example)
                example_owner.append(i)
            for counter in d.counter_examples:
                counters.append(counter)
                counter_owner.append(i)
            dotted = d.capability_id.split(":")[-1].split("@")[0]
            for precedence, name in (
                (0, id_name(d.capability_id)),
                (0, dotted),
                (1, d.title),
                *((2, a) for a in d.aliases),
            ):
                key = name_key(name)
                if key not in (("zh", ""), ((), ())):
                    self._names.setdefault(key, []).append((precedence, i, name))
            for alias in [*d.aliases, d.title, id_name(d.capability_id)]:
                lowered = alias.lower().strip()
                if re.search(f"[{_CJK}]", lowered):
                    self._cjk_aliases.setdefault(lowered, set()).add(i)
                else:
                    key = tuple(tokens(lowered))
                    if key:
                        self._aliases.setdefault(key, set()).add(i)
        self._size = len(self.caps)
        # Words that size or place a feature rather than name one (the catalog's input names:
        # radius, depth, diameter, edges …): a clause naming only these names no feature.
        self._parameter_terms = frozenset(
            t
            for cap in self.caps
            for n in cap.input_names
            for t in tokens(re.sub(r"([a-z])([A-Z])", r"\1 \2", n))
        )
        # The operations nothing here performs, with the phrases that ask for them: Chinese
        # ones as substrings, English ones as term sets (stemmed once, not per search).
        self._unperformed_asks = [
            (
                op,
                tuple(p for p in op.asks if _is_cjk(p)),
                tuple(t for p in op.asks if not _is_cjk(p) and (t := frozenset(tokens(p)))),
            )
            for op in OPERATIONS
            if not any(_performs(cap.descriptor, op) for cap in self.caps)
        ]
        # Document frequencies for lexical coverage.
        self._doc_terms = [frozenset(doc) for doc in documents]
        df: dict[str, int] = {}
        for terms in self._doc_terms:
            for t in terms:
                df[t] = df.get(t, 0) + 1
        self._idf = {t: math.log(1 + (self._size - n + 0.5) / (n + 0.5)) for t, n in df.items()}
        self._idf_unknown = math.log(1 + (self._size + 0.5) / 0.5)
        self._example_owner = np.asarray(example_owner, dtype=np.int64)
        self._counter_owner = np.asarray(counter_owner, dtype=np.int64)
        self._hasher = HashingEmbedder()
        self.embedder: Embedder = embedder if embedder is not None else self._hasher
        self.model = embedder is not None and not isinstance(embedder, HashingEmbedder)
        self.weights = MODEL_WEIGHTS if self.model else DEFAULT_WEIGHTS
        texts = {
            "documents": documents,
            "examples": examples,
            "counters": counters,
            "dense": [_dense_text(c.descriptor) for c in self.caps] if config.dense else [],
        }
        identity = embedder_identity(self.embedder) if cache is not None else None
        self.cache_key = (
            None
            if identity is None
            else sha256_hex(
                {
                    "format": INDEX_FORMAT,
                    "code": _code_hash(),
                    "embedder": identity,
                    "hasher": embedder_identity(self._hasher),
                    # BM25 sees a bag of words (input names come from a set: their order
                    # differs between processes)
                    "texts": {**texts, "documents": [sorted(doc) for doc in documents]},
                }
            )
        )
        """With a cache: what the built index depends on (the texts it indexes, the embedders
        and this module's code); ``None`` without one, or when the embedder declares no
        version (then it is never cached)."""
        self.cached = False
        """True when the matrices were read from the cache instead of being computed."""
        stored = cache.load(self.cache_key) if cache is not None and self.cache_key else None
        if stored is not None and self._restore(*stored):
            self.cached = True
        else:
            self._compute(texts)
            if cache is not None and self.cache_key is not None:
                cache.save(self.cache_key, *self._export())
        self._producible = frozenset(t for c in self.caps for t in c.produces)
        self._by_id = {c.descriptor.capability_id: i for i, c in enumerate(self.caps)}

    def __len__(self) -> int:
        return self._size

    # -- the matrices: computed, or read from the cache --------------------------------------

    _MATRICES = ("examples", "counters", "dense", "m_examples", "m_counters")

    def _compute(self, texts: Mapping[str, Any]) -> None:
        """BM25 over the discovery text; example and counterexample retrieval (always the
        hashing embedder: it needs no model); the configured dense retriever over whole
        descriptions; with a sentence-embedding model, examples and counterexamples again."""
        examples, counters = texts["examples"], texts["counters"]
        self._bm25 = _Bm25.build(texts["documents"]) if self._size else None
        self._examples = _Matrix.of(self._hasher.embed(examples)) if examples else None
        self._counters = _Matrix.of(self._hasher.embed(counters)) if counters else None
        self._dense = _Matrix.of(self.embedder.embed(texts["dense"])) if texts["dense"] else None
        self._m_examples = (
            _Matrix.of(self.embedder.embed(examples)) if self.model and examples else None
        )
        self._m_counters = (
            _Matrix.of(self.embedder.embed(counters)) if self.model and counters else None
        )

    def _export(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The matrices as named arrays, and what is not an array (the BM25 vocabulary)."""
        arrays: dict[str, Any] = {}
        if self._bm25 is not None:
            arrays.update({f"bm25.{k}": v for k, v in self._bm25.arrays.items()})
        for name in self._MATRICES:
            matrix = getattr(self, f"_{name}")
            if matrix is not None:
                arrays.update({f"{name}.{k}": v for k, v in matrix.arrays.items()})
        vocab = self._bm25.vocab if self._bm25 is not None else None
        return arrays, {"bm25Vocab": vocab}

    def _restore(self, arrays: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
        """Take the matrices from a cache entry; False (nothing taken) unless every one is
        there with the shape this catalog needs."""

        def part(name: str) -> dict[str, Any]:
            return {k.split(".", 1)[1]: v for k, v in arrays.items() if k.startswith(name + ".")}

        rows = {
            "examples": len(self._example_owner),
            "counters": len(self._counter_owner),
            "dense": self._size if self.config.dense else 0,
            "m_examples": len(self._example_owner) if self.model else 0,
            "m_counters": len(self._counter_owner) if self.model else 0,
        }
        matrices: dict[str, _Matrix | None] = {}
        try:
            for name, n in rows.items():
                found = part(name)
                if not n:
                    if found:
                        return False
                    matrices[name] = None
                    continue
                matrix = _Matrix(found)
                keys = {"data", "indices", "indptr", "shape"} if matrix.sparse else {"rows"}
                if set(found) != keys or (not matrix.sparse and found["rows"].ndim != 2):
                    return False
                if matrix.n_rows != n:
                    return False
                if matrix.sparse and (
                    len(found["indptr"]) != found["shape"][1] + 1
                    or len(found["data"]) != len(found["indices"])
                    or found["indptr"][-1] != len(found["data"])
                    or (len(found["indices"]) and found["indices"].max() >= n)
                ):
                    return False
                matrices[name] = matrix
            bm25 = None
            if self._size:
                found, vocab = part("bm25"), meta.get("bm25Vocab")
                if not isinstance(vocab, dict) or not {"data", "indices", "indptr"} <= set(found):
                    return False
                indptr = found["indptr"]
                if (
                    int(found["num_docs"][0]) != self._size
                    # bm25s may add an empty-string term with no column of its own
                    or len(indptr) - 1 not in (len(vocab), len(vocab) - 1)
                    or sorted(vocab.values()) != list(range(len(vocab)))
                    or indptr[-1] != len(found["data"])
                    or (len(found["indices"]) and found["indices"].max() >= self._size)
                ):
                    return False
                bm25 = _Bm25(found, vocab)
        except (KeyError, IndexError, TypeError, ValueError):
            return False
        self._bm25 = bm25
        for name, matrix in matrices.items():
            setattr(self, f"_{name}", matrix)
        return True

    # -- stages 2 and 3: routing and candidates ---------------------------------------------

    def _max_per_owner(self, scores: Any, owners: Any) -> Any:
        import numpy as np

        best = np.zeros(self._size, dtype=np.float32)
        if len(scores):
            np.maximum.at(best, owners, scores)
        return best

    def _alias_hits(self, norm: Normalized) -> dict[int, tuple[str, frozenset[str]]]:
        """Capabilities with an alias (or title) that occurs in the intent, longest first:
        the alias as written and its terms."""
        found: dict[int, tuple[str, frozenset[str]]] = {}
        words = tokens(norm.text)
        latin = [w for w in words if not w[0] >= "\u3400"]
        for n in range(min(4, len(latin)), 0, -1):
            for start in range(len(latin) - n + 1):
                key = tuple(latin[start : start + n])
                for i in self._aliases.get(key, ()):
                    found.setdefault(i, (" ".join(key), frozenset(key)))
        lowered = norm.text.lower()
        for run in re.findall(f"[{_CJK}]+", lowered):
            for size in range(min(8, len(run)), 1, -1):
                for start in range(len(run) - size + 1):
                    alias = run[start : start + size]
                    for i in self._cjk_aliases.get(alias, ()):
                        found.setdefault(i, (alias, frozenset(tokens(alias))))
        return found

    def _candidates(self, norm: Normalized) -> dict[int, _Candidate]:
        import numpy as np

        out: dict[int, _Candidate] = {}

        def take(scores: Any, attribute: str) -> None:
            k = min(CANDIDATES_PER_RETRIEVER, self._size)
            if k == 0:
                return
            top = np.argpartition(-scores, k - 1)[:k]
            for i in top:
                if scores[i] > 0:
                    candidate = out.setdefault(int(i), _Candidate(int(i)))
                    setattr(candidate, attribute, float(scores[i]))

        terms = list(dict.fromkeys(norm.terms))
        if self.config.bm25 and terms and self._bm25 is not None:
            scores = self._bm25.scores(terms)
            take(scores, "bm25")
            top = float(scores.max()) if len(scores) else 0.0
            for c in out.values():
                c.bm25 = c.bm25 / top if top > 0 else 0.0
        query = self._hasher.embed_one(norm.text) if norm.text.strip() else None
        if self.config.examples and query is not None and self._examples is not None:
            sims = self._examples.similarities(query)
            example = self._max_per_owner(sims, self._example_owner)
            take(example, "example")
        vector = None
        if self.config.dense and self._dense is not None and norm.text.strip():
            vector = query if not self.model else self.embedder.embed([norm.text])
            take(self._dense.similarities(vector), "dense")
        if self.model and vector is not None and self._m_examples is not None:
            m_sims = self._m_examples.similarities(vector)
            model_example = self._max_per_owner(m_sims, self._example_owner)
            take(model_example, "model_example")
            model_counter = (
                self._max_per_owner(self._m_counters.similarities(vector), self._counter_owner)
                if self._m_counters is not None
                else None
            )
            for c in out.values():
                c.model_example = float(model_example[c.index])
                c.model_sentence = self._nearest_sentence(m_sims, c.index)
                if model_counter is not None:
                    c.model_counter = float(model_counter[c.index])
        if self.config.aliases:
            aliased = sorted(self._alias_hits(norm).items(), key=lambda kv: -len(kv[1][1]))
            for i, (alias, alias_terms) in aliased[:CANDIDATES_PER_RETRIEVER]:
                candidate = out.setdefault(i, _Candidate(i))
                candidate.alias = 1.0
                candidate.alias_terms = alias_terms
                candidate.why.append(f"alias:{alias}")
        if self.config.penalties and query is not None and self._counters is not None and out:
            counter = self._max_per_owner(self._counters.similarities(query), self._counter_owner)
            for c in out.values():
                c.counter = float(counter[c.index])
        # exact example similarity of every candidate, not only of the example retriever's top
        if self.config.examples and query is not None and self._examples is not None and out:
            for c in out.values():
                if c.example == 0.0:
                    c.example = float(example[c.index])
                c.sentence = self._nearest_sentence(sims, c.index)
        self._lexical(norm, out)
        return out

    def _nearest_sentence(self, sims: Any, index: int) -> float:
        """The similarity of a capability's nearest intent example (a sentence, not its
        title or an alias), from the similarities to every example row."""
        start, end = self._sentence_rows[index]
        return float(sims[start:end].max()) if end > start else 0.0

    def _units(self, norm: Normalized) -> list[tuple[float, tuple[str, ...]]]:
        """The intent as weighted units of content, each with the terms that match it.

        An English word is a unit weighing its idf (an unknown word the highest idf).
        Chinese has no spaces, so each Chinese character is a unit weighing half the idf of
        the rarest known term covering it (a bigram it is part of, else the character
        itself): a known two-character word weighs about as much as a known English word,
        and a character no known term covers weighs half the unknown idf, so unknown
        content lowers every capability's coverage alike, as an unknown English word does
        (less when an unknown word is made of common characters, which weigh their own idf).
        Function characters (的, 把, 个…) are no units, and bigrams holding one match
        nothing. Units count per occurrence, in either language."""
        units: list[tuple[float, tuple[str, ...]]] = []
        for t in norm.terms:
            if t[0] < "\u3400":
                units.append((self._idf.get(t, self._idf_unknown), (t,)))
        for run in _TOKEN.findall(norm.text.lower()):
            if run[0] < "\u3400":
                continue
            for i, ch in enumerate(run):
                if ch in _CJK_STOP:
                    continue
                covering = [ch] + [
                    b
                    for b in (run[i - 1 : i + 1] if i else "", run[i : i + 2])
                    if len(b) == 2 and not set(b) & _CJK_STOP
                ]
                known = [self._idf[u] for u in covering if u in self._idf]
                units.append((0.5 * (max(known) if known else self._idf_unknown), tuple(covering)))
        return units

    def _lexical(self, norm: Normalized, out: dict[int, _Candidate]) -> None:
        """Coverage: the weighted share of the intent's units of content (see :meth:`_units`)
        a capability's discovery text holds. A unit earns what the best of its terms in that
        text is worth: a Chinese character matched only by itself, not by the bigram that
        carries its word, earns its own idf's share; a term found only in the capability's
        intent examples earns :data:`EXAMPLE_TERM_SHARE` of it."""
        units = self._units(norm)
        total = sum(w for w, _ in units) or 1.0
        for c in out.values():
            doc = self._doc_terms[c.index]
            described = self._described[c.index]
            earned = 0.0
            shown: dict[str, float] = {}
            for weight, covering in units:
                found = [
                    (
                        (weight if len(covering) == 1 else min(weight, 0.5 * self._idf[u]))
                        * (1.0 if u in described else EXAMPLE_TERM_SHARE),
                        u,
                    )
                    for u in covering
                    if u in doc and u in self._idf
                ]
                if found:
                    share, term = max(found)
                    earned += share
                    shown[term] = max(shown.get(term, 0.0), share)
            c.lexical = earned / total
            strong = sorted(shown, key=lambda t: -shown[t])[:3]
            c.why.extend(f"term:{t}" for t in strong if shown[t] > 0)
            if c.alias:  # how much of the intent the matched alias explains
                c.alias = self._alias_share(units, c.alias_terms) / total

    @staticmethod
    def _alias_share(
        units: list[tuple[float, tuple[str, ...]]], alias_terms: frozenset[str]
    ) -> float:
        """The weight of the units a matched alias explains. A Chinese character of a longer
        alias explains a unit only through a bigram of the alias (the 倒 of 倒圆 is not
        explained by the alias 倒角)."""
        if any(len(t) > 1 and t[0] >= "\u3400" for t in alias_terms):
            alias_terms = frozenset(t for t in alias_terms if len(t) > 1 or t[0] < "\u3400")
        return sum(w for w, covering in units if set(covering) & alias_terms)

    def _score(self, norm: Normalized, c: _Candidate) -> None:
        """The candidate's rank and evidence (see :class:`Weights`)."""
        cap = self.caps[c.index]
        w = self.weights
        if self.config.name == BM25_ONLY.name:
            c.rank = c.bm25
            c.relevance = max(0.0, min(1.0, c.lexical))
            return
        rank = (
            w.bm25 * c.bm25
            + w.alias * c.alias
            + w.example * c.example
            + w.lexical * c.lexical
            + w.dense * c.dense
            + w.model_example * c.model_example
        )
        evidence = (
            w.evidence_lexical * c.lexical
            + (1 - w.evidence_lexical) * c.sentence
            + w.evidence_alias * c.alias
        )
        if self.model:
            evidence = (1 - w.evidence_model) * evidence + w.evidence_model * c.model_sentence
        if c.example >= 0.45 or c.model_example >= 0.6:
            c.why.append("example:nearest")
        if self.config.penalties:
            if c.counter > c.example and c.counter > 0.3:
                rank *= max(0.25, 1 - w.counter * (c.counter - c.example))
                c.why.append("policy:counterexample")
            if self.model and c.model_counter > c.model_example:
                rank *= max(0.25, 1 - w.model_counter * (c.model_counter - c.model_example))
                c.why.append("policy:counterexample")
            ruled_out = [t for t in norm.negated if t in cap.identity]
            if ruled_out:
                rank *= 0.25
                evidence *= 0.25
                c.why.append("policy:negated:" + ",".join(ruled_out))
        roles = {q.role for q in norm.quantities if q.role}
        if "Angle" in {q.dimension for q in norm.quantities} and "Angle" in set(
            cap.descriptor.inputs.semantic_types
        ):
            c.why.append("unit:Angle")
        if roles & cap.input_names:
            c.why.append("unit:" + ",".join(sorted(roles & cap.input_names)))
        c.rank = rank
        c.relevance = max(0.0, min(1.0, evidence))

    def _route(self, norm: Normalized, out: dict[int, _Candidate]) -> list[str]:
        """Stage 2: the cued top-level branch weighs in first; then the leaves that hold the
        most relevance among the candidates are the routed branches."""
        cued = list(norm.cues)
        if self.config.routing and cued:
            for c in out.values():
                top = self.caps[c.index].top
                if top == cued[0]:
                    c.rank *= self.weights.cue_boost
                elif top not in cued:
                    c.rank *= self.weights.off_cue
        mass: dict[str, float] = {}
        for c in out.values():
            leaf = self.caps[c.index].leaf
            mass[leaf] = mass.get(leaf, 0.0) + c.rank
        leaves = [leaf for leaf, m in sorted(mass.items(), key=lambda kv: -kv[1]) if m > 0][:3]
        for c in out.values():
            if self.caps[c.index].leaf in leaves:
                c.why.insert(0, f"taxonomy:{self.caps[c.index].leaf}")
        return leaves

    # -- stage 4: typed filtering ---------------------------------------------------------------

    def _filter(
        self, request: SearchRequest, out: dict[int, _Candidate], filtered: dict[str, int]
    ) -> None:
        kinds = set(request.include_kinds)
        max_risk = request.constraints.max_risk
        max_cost = request.constraints.max_cost
        known = {k.type for k in request.known_inputs}
        desired = set(request.desired_outputs)
        upstream = (
            {t for c in self.caps if c.produces & desired for t in c.accepts} if desired else set()
        )
        producible = self._producible
        selections = len(request.selection_refs)

        def drop(i: int, reason: str) -> None:
            out.pop(i, None)
            filtered[reason] = filtered.get(reason, 0) + 1

        for i in list(out):
            cap = self.caps[i]
            d = cap.descriptor
            if kinds and d.kind not in kinds:
                drop(i, "kind")
            elif max_risk is not None and RISK_RANK[d.risk.level] > RISK_RANK[max_risk]:
                drop(i, "risk")
            elif max_cost is not None and _COST_RANK[d.execution.cost_class] > _COST_RANK[max_cost]:
                drop(i, "cost")
            elif desired and not (cap.produces & desired) and not (cap.produces & upstream):
                drop(i, "outputType")
            elif (
                known
                and cap.accepts - {"EntitySet"}
                and not ((cap.accepts & known) or (cap.accepts & producible - known))
            ):
                drop(i, "inputType")
            elif (
                known
                and d.applicability.requires_representation
                and not (set(d.applicability.requires_representation) & (known | producible))
            ):
                drop(i, "representation")
            elif (
                selections > 1
                and d.applicability.selection is not None
                and d.applicability.selection.cardinality.value == "one"
            ):
                drop(i, "cardinality")

    # -- stage 5: applicability ------------------------------------------------------------------

    def applicability(
        self,
        d: CapabilityDescriptor,
        context: SearchContext | None,
        request: SearchRequest | None = None,
    ) -> tuple[Applicability, list[str], Authorization, list[str]]:
        """Runtime applicability with the unmet preconditions, and the grant's verdict."""
        unmet: list[str] = []
        decided = False
        conditional = False
        ref = d.target[1]
        if context is not None and context.snapshot is not None and d.patch_template_ref is None:
            decided = True
        # a workflow's definition is the host's to expand (plan.check checks the steps it
        # expands to); no runtime component executes the workflow itself
        if decided and d.workflow_ref is None:
            running = [c for c in context.snapshot.components if ref in c.supported_operations]
            available = [c for c in running if c.status is ComponentStatus.AVAILABLE]
            if not running:
                unmet.append(f"no runtime component executes {ref}")
            elif not available:
                conditional = True
                unmet.append(f"the component executing {ref} is {running[0].status.value}")
            precision = request.constraints.precision if request is not None else None
            if precision is ExecutionQuality.AUTHORITATIVE and not any(
                ExecutionQuality.AUTHORITATIVE in c.quality_profiles for c in available
            ):
                conditional = True
                unmet.append(f"{ref} is not authoritative here")
        if context is not None and context.revision_types is not None:
            decided = True
            wanted = set(d.applicability.requires_representation)
            if wanted and not wanted & context.revision_types:
                unmet.append(f"the revision has no {' or '.join(sorted(wanted))}")
        if context is not None and context.selection_count is not None:
            decided = True
            rule = d.applicability.selection
            if rule is not None and context.selection_count == 0:
                conditional = True
                kind = rule.entity_kind.value
                unmet.append(f"needs {'an' if kind[0] in 'AEIOU' else 'a'} {kind} selection")
        if not decided:
            state = Applicability.UNKNOWN
        elif any(not u.startswith(("needs a", "the component", f"{ref} is not")) for u in unmet):
            state = Applicability.NOT_APPLICABLE
        elif conditional:
            state = Applicability.CONDITIONALLY_APPLICABLE
        else:
            state = Applicability.APPLICABLE
        if context is not None and context.grant is not None:
            verdict, reasons = authorize(context.grant, d)
            return state, unmet, verdict, [message for _, message in reasons]
        return state, unmet, Authorization.ALLOWED, []

    # -- the whole pipeline ----------------------------------------------------------------------

    def search(
        self, request: SearchRequest | str, context: SearchContext | None = None
    ) -> SearchResponse:
        """Run every stage for one request; at most ``topK`` hits (and ``MAX_TOP_K``)."""
        if isinstance(request, str):
            request = SearchRequest(intent=request)
        norm = normalize(request.intent)
        out = self._candidates(norm)
        for c in out.values():
            self._score(norm, c)
        branches = self._route(norm, out)
        filtered: dict[str, int] = {}
        self._filter(request, out, filtered)
        intent = NormalizedIntent(
            raw=norm.raw,
            terms=list(dict.fromkeys(norm.terms)),
            negated=list(norm.negated),
            quantities=list(norm.quantities),
            branches=branches,
        )
        named = self._named_by_intent(request, norm, out)
        if named:
            return self._named_response(request, context, intent, filtered, out, named)
        unperformed = self._unperformed(norm)
        if not unperformed:
            part = self._part(request, norm, out)
            if part is not None:
                return self._part_response(request, context, intent, filtered, part)
        if unperformed:
            wanted = "; ".join(f"{op.name} ({op.what})" for op in unperformed)
            return self._no_match(
                intent,
                filtered,
                f"the intent asks for an operation no capability in the catalog performs: "
                f"{wanted}; capabilities that only match the words around it would not do it",
                Sufficiency(
                    evaluated=True,
                    missing_information=[
                        f"a capability that performs {op.name}" for op in unperformed
                    ],
                ),
            )
        ranked = self._rerank(request, out)
        threshold = self.weights.no_match_below if self.config.name != BM25_ONLY.name else 0.0
        best = max((c.relevance for c in ranked[:NO_MATCH_DEPTH]), default=0.0)
        if not ranked or best < threshold or best == 0.0:
            return self._no_match(
                intent,
                filtered,
                f"no capability matches well enough (best retrievalRelevance {best:.3f} < "
                f"{threshold:g}); rephrase, or the catalog lacks this capability",
                Sufficiency(
                    evaluated=bool(request.known_inputs or request.desired_outputs),
                    missing_information=["a capability for this intent"],
                ),
            )
        return self._ranked_response(request, context, intent, filtered, ranked)

    def _ranked_response(
        self,
        request: SearchRequest,
        context: SearchContext | None,
        intent: NormalizedIntent,
        filtered: dict[str, int],
        ranked: list[_Candidate],
    ) -> SearchResponse:
        """The first ``topK`` of ``ranked`` as hits, with what sufficiency adds after them."""
        top_k = min(request.top_k, MAX_TOP_K)
        chosen = ranked[:top_k]
        sufficiency, extra = self._sufficiency(request, [c.index for c in chosen])
        response = SearchResponse(
            intent=intent,
            hits=[self._hit(c, context, request) for c in [*chosen, *extra]],
            no_match=False,
            embedder=self.embedder.name,
            filtered=filtered,
            sufficiency=sufficiency,
            truncated=len(ranked) > len(chosen) and len(chosen) == top_k,
        )
        return _fit(response, request.max_bytes)

    # -- a capability by its name -------------------------------------------------------------

    def _named_by_intent(
        self, request: SearchRequest, norm: Normalized, out: dict[int, _Candidate]
    ) -> list[_Candidate]:
        """The candidates the whole intent names (:func:`name_key`): by their id's words,
        their title or an alias, in that precedence. An intent that is a capability's name
        is that capability, whatever the evidence of its few words says (one word is little
        text for a sentence model)."""
        if not self.config.aliases:  # the BM25 baseline matches no names
            return []
        key = name_key(request.intent)
        if key in (("zh", ""), ((), ())):
            return []
        named: list[_Candidate] = []
        for precedence, i, name in sorted(self._names.get(key, ())):
            if i not in out:  # not retrieved by its words ("no interference" negates them)
                found = {i: _Candidate(i)}
                self._score(norm, found[i])
                self._filter(request, found, {})  # what the request rules out stays out
                out.update(found)
            c = out.get(i)
            if c is not None and c not in named:
                c.relevance = max(c.relevance, NAMED_RELEVANCE)
                c.why.insert(0, f"{('name', 'title', 'alias')[precedence]}:{name}")
                named.append(c)
        return named

    def _named_response(
        self,
        request: SearchRequest,
        context: SearchContext | None,
        intent: NormalizedIntent,
        filtered: dict[str, int],
        out: dict[int, _Candidate],
        named: list[_Candidate],
    ) -> SearchResponse:
        """The capabilities an intent names first (see :meth:`_named_by_intent`), then the
        rest as ranked."""
        ranked = [*named, *(c for c in self._rerank(request, out) if c not in named)]
        return self._ranked_response(request, context, intent, filtered, ranked)

    # -- whole parts ----------------------------------------------------------------------------

    def _clause_ranking(
        self, request: SearchRequest, clause: str
    ) -> tuple[Normalized, list[_Candidate]]:
        """One clause searched as an intent of its own: its candidates best first."""
        norm = normalize(clause)
        out = self._candidates(norm)
        for c in out.values():
            self._score(norm, c)
        self._route(norm, out)
        self._filter(request, out, {})
        return norm, self._rerank(request, out)

    def _named(self, norm: Normalized, c: _Candidate) -> frozenset[str]:
        """The words by which a clause names the capability: a matched alias (or title), else
        terms of its title, aliases or id that are no parameter words (radius, depth …); in
        Chinese, two-character terms only (a single character is too loose: 角 of 倒角 is
        also the corner of 四个角). Empty when the clause does not name it."""
        if c.alias_terms:  # named by a whole alias: by those words, not by parts of others
            return c.alias_terms
        named = set(norm.terms) & self.caps[c.index].identity
        return frozenset(
            t for t in named if (len(t) > 1 if t[0] >= "\u3400" else t not in self._parameter_terms)
        )

    def _part(
        self, request: SearchRequest, norm: Normalized, out: dict[int, _Candidate]
    ) -> _Part | None:
        """A whole part: the intent's clauses searched one by one (:func:`clauses`). A
        clause's **features** are its candidates ranked within :data:`FEATURE_TIE` of its
        best that it names (:meth:`_named`) with evidence at the no-match threshold, the
        strongest evidence first, each named by words no stronger one took ("a hollow box":
        the shell and the box). Two features, one of them an operation that builds a solid,
        make the intent a part (a solid with a fillet, a solid to export); None when it is
        none."""
        if self.config.name == BM25_ONLY.name:
            return None
        found = clauses(norm.raw)
        if len(found) < 2:
            return None
        threshold = self.weights.no_match_below
        features: dict[int, tuple[str, _Candidate]] = {}
        merged: dict[int, tuple[float, _Candidate]] = {}
        unknown: list[str] = []
        negated = set(norm.negated)

        def merge(ranked: Iterable[_Candidate], top: float) -> None:
            for c in ranked:
                share = c.rank / top
                if share > merged.get(c.index, (0.0, c))[0]:
                    merged[c.index] = (share, c)

        for clause in found:
            clause_norm, ranked = self._clause_ranking(request, clause)
            if not ranked or ranked[0].rank <= 0:
                continue
            merge(ranked, ranked[0].rank)
            asked = set(clause_norm.cues)
            near = [
                (c, words)
                for c in ranked
                if c.rank >= FEATURE_AFTER * ranked[0].rank
                and self._feature_kind(c.index, asked)
                and c.relevance >= (FEATURE_ALIAS_EVIDENCE if c.alias_terms else 1.0) * threshold
                if (words := self._named(clause_norm, c))
                and not negated & self.caps[c.index].identity
            ]
            taken: set[str] = set()
            first = [cw for cw in near if cw[0].rank >= FEATURE_TIE * ranked[0].rank]
            for c, words in [
                *sorted(first, key=lambda cw: -cw[0].relevance)[:1],
                *sorted(near, key=lambda cw: -cw[0].rank),
            ]:
                if words & taken or (taken and not c.alias_terms):
                    continue
                taken |= words
                known = features.get(c.index)
                if known is None or c.relevance > known[1].relevance:
                    features[c.index] = (clause, c)
            if not near and any(
                t not in self._idf and t not in self._parameter_terms
                for t in clause_norm.terms
                if t[0] < "\u3400"
            ):
                unknown.append(clause)
        building = [i for i in features if self.caps[i].descriptor.kind in WRITING_KINDS]
        if len(features) < 2 or not any("ExactSolid" in self.caps[i].produces for i in building):
            return None  # a part is a solid: profiles alone are a sketch, checks a check
        top = max((c.rank for c in out.values()), default=0.0)
        if top > 0:
            merge(out.values(), top)
        ordered = sorted(
            features.values(),
            key=lambda fc: (-fc[1].relevance, self.caps[fc[1].index].descriptor.capability_id),
        )
        # the whole intent's best answer stays first when it is a confident one: a
        # single-capability request with a side clause ("extrude it 3 mm, both ways") is
        # still that capability
        lead = None
        if out:
            best = max(out.values(), key=lambda c: (c.rank, -c.index))
            if best.relevance >= threshold:
                lead = best
            if lead is not None and self.caps[lead.index].top in {*norm.cues} - {"io.export"}:
                return None  # a question or a check about a part ("is there 0.5 mm between
                # the lid and the boss?"), answered as a whole
        rest = {i: sc for i, sc in merged.items() if i not in features}
        return _Part(ordered, rest, unknown, lead, norm.cues)

    def _feature_kind(self, i: int, asked: set[str]) -> bool:
        """Whether a capability can be the feature of a clause: of the branch the clause's
        cue words ask for (a measurement, a check, an export: "is there 0.5 mm between the
        lid and the boss?" asks no boss to be built), else an operation that builds (or an
        import)."""
        if asked:
            return self.caps[i].top in asked
        return self.caps[i].descriptor.kind in WRITING_KINDS

    def _tier(self, i: int, feature: bool, cued: set[str]) -> int:
        """Where a part's hit goes: the features that build it first, then the checks and
        measurements it asks for, its exporters (a part is built before it is saved); then
        the other candidates: operations that make shapes (and queries and validators when
        the intent asks to measure or check), the rest, exporters last."""
        cap = self.caps[i]
        kind = cap.descriptor.kind
        if feature:
            return 0 if kind in WRITING_KINDS else 2 if kind is CapabilityKind.EXPORTER else 1
        if kind is CapabilityKind.EXPORTER:
            return 5
        if kind in WRITING_KINDS:
            return 3 if cap.produces & _SHAPES else 4
        return 3 if cap.top in cued else 4

    def _part_response(
        self,
        request: SearchRequest,
        context: SearchContext | None,
        intent: NormalizedIntent,
        filtered: dict[str, int],
        part: _Part,
    ) -> SearchResponse:
        """The hits of a whole part (see :meth:`_tier`), each with the evidence of the
        clause (or the whole intent) it answers best, and what the plan still needs
        (:meth:`_part_sufficiency`) right after the features."""
        cued = set(part.cues) & {"query", "validation"}
        features: list[_Candidate] = []
        for clause, c in part.features:
            label = clause if len(clause) <= 40 else clause[:39] + "…"
            c.why.insert(0, f"part:{label}")
            features.append(c)
        features.sort(key=lambda c: self._tier(c.index, True, cued))
        rest = sorted(
            part.rest.values(),
            key=lambda sc: (
                self._tier(sc[1].index, False, cued),
                -sc[0],
                self.caps[sc[1].index].descriptor.capability_id,
            ),
        )
        behind = [c for _, c in rest]
        sufficiency, needed = self._part_sufficiency(request, features, behind, part.unknown)
        ranked = [*features, *needed, *(c for c in behind if c not in needed)]
        lead_kind = self.caps[part.lead.index].descriptor.kind if part.lead else None
        if (
            part.lead is not None
            and lead_kind is not CapabilityKind.EXPORTER  # a part is built before it is saved
            and part.lead.index in {c.index for c in ranked}
        ):
            lead = next(c for c in ranked if c.index == part.lead.index)
            ranked = [lead, *(c for c in ranked if c is not lead)]
        top_k = min(request.top_k, MAX_TOP_K)
        chosen = ranked[:top_k]
        hits = [self._hit(c, context, request) for c in chosen]
        response = SearchResponse(
            intent=intent,
            hits=hits,
            no_match=False,
            embedder=self.embedder.name,
            filtered=filtered,
            sufficiency=sufficiency,
            truncated=len(ranked) > len(chosen),
        )
        return _fit(response, request.max_bytes)

    def _makes_body(self, i: int) -> bool:
        """A capability that makes a solid from nothing (a primitive, an import) or from a
        profile (an extrusion): the base a part's features work on."""
        cap = self.caps[i]
        return "ExactSolid" in cap.produces and not (cap.accepts - {"EntitySet", "Profile"})

    def _joins(self, i: int) -> bool:
        """An operation that takes two bodies (a target and a tool: union, cut …)."""
        return {"target", "tool"} <= self.caps[i].input_names

    def _part_sufficiency(
        self,
        request: SearchRequest,
        features: list[_Candidate],
        behind: list[_Candidate],
        unknown: list[str],
    ) -> tuple[Sufficiency, list[_Candidate]]:
        """What a part's features still need, by the catalog's relations: a body to work
        on when no feature makes one (the candidate that ``composesWith`` a feature, else the
        best-ranked primitive); a solid from a profile when a feature only draws one (the
        best-ranked operation that accepts a ``Profile`` and produces a solid); a profile when
        a feature makes its solid from one that no feature draws (the best-ranked profile
        that ``composesWith`` it, else the best-ranked profile); the known
        inputs' path to the desired outputs (as for any search). Added capabilities are in
        ``expandedWith``; the clauses nothing answered that hold words the catalog does not
        know are ``missingInformation``."""
        typed, extra = self._sufficiency(request, [c.index for c in features])
        needed = list(extra)
        missing_types = list(typed.missing_types)
        have = {c.index for c in features}
        known = {k.type for k in request.known_inputs}

        def add(c: _Candidate | None, why: str) -> bool:
            if c is None:
                return False
            c.why.append(why)
            needed.append(c)
            have.add(c.index)
            return True

        def partner(pool: list[_Candidate], ids: set[str]) -> _Candidate | None:
            """The best-ranked of ``pool`` that ``composesWith`` one of ``ids``, else the
            best-ranked of ``pool``."""
            composed = (c for c in pool if ids.intersection(self.caps[c.index].composes))
            return next(composed, pool[0] if pool else None)

        def related(pool: list[_Candidate], fits: Any) -> _Candidate | None:
            """The first capability that ``fits`` and that a feature ``composesWith`` (in the
            order the relation lists them, features by rank), else the best-ranked of the
            candidates ``pool``."""
            order = [r for c in [*features, *needed] for r in self.caps[c.index].composes]
            by_id = {self.caps[c.index].descriptor.capability_id: c for c in pool}
            for ref in order:
                i = self._by_id.get(ref)
                if i is not None and i not in have and fits(i):
                    return by_id.get(ref) or _Candidate(i)
            return pool[0] if pool else None

        profiles = any(self.caps[i].produces == {"Profile"} for i in have)
        if profiles and not any("Profile" in self.caps[i].accepts for i in have):

            def solid(i: int) -> bool:
                cap = self.caps[i]
                return {"Profile"} == cap.accepts - {"ExactSolid"} and "ExactSolid" in cap.produces

            pool = [c for c in behind if solid(c.index)]
            if not add(related(pool, solid), "relation:accepts:Profile"):
                missing_types.append("ExactSolid")
        drawn = [i for i in have if "Profile" in self.caps[i].accepts]
        if drawn and "Profile" not in known and not profiles:
            # a solid made from a profile (a revolve, a loft) that no feature draws: the
            # best-ranked profile the catalog relates to it (one that composesWith it)
            ids = {self.caps[i].descriptor.capability_id for i in drawn}

            def draws(i: int) -> bool:
                cap = self.caps[i]
                return cap.produces == {"Profile"} and not cap.accepts

            pool = [c for c in behind if draws(c.index)]
            if not add(partner(pool, ids), "relation:produces:Profile"):
                missing_types.append("Profile")
        if "ExactSolid" not in known and not any(self._makes_body(i) for i in have):
            # the part names no base shape ("a washer: 2 cm outside, 1 cm hole"): the two
            # likeliest bodies, the one a feature composes with first
            ids = {self.caps[i].descriptor.capability_id for i in have}
            bodies = [c for c in behind if self._makes_body(c.index)]
            first = partner(bodies, ids)
            if not add(first, "relation:produces:ExactSolid"):
                missing_types.append("ExactSolid")
            add(next((c for c in bodies if c is not first), None), "relation:produces:ExactSolid")
        if sum(self._makes_body(i) for i in have) >= 2 and not any(self._joins(i) for i in have):
            # two bodies make one part only when one is fused into (or cut from) the other
            add(next((c for c in behind if self._joins(c.index)), None), "relation:accepts:tool")
        for i in [i for i in have if self._joins(i)]:
            # a body fused into (or cut from) another is placed there first: what the join
            # composesWith (a translate), unless the part has it
            by_id = {self.caps[c.index].descriptor.capability_id: c for c in behind}
            for ref in self.caps[i].composes:
                j = self._by_id.get(ref)
                if j is not None and j not in have:
                    add(by_id.get(ref) or _Candidate(j), "relation:composesWith")
        missing = [*typed.missing_information]
        missing += [f"a way to obtain {t}" for t in missing_types if t not in typed.missing_types]
        missing += [f"a capability for: {clause}" for clause in unknown]
        return (
            Sufficiency(
                evaluated=True,
                complete=not missing,
                missing_types=sorted(set(missing_types)),
                expanded_with=[self.caps[c.index].descriptor.capability_id for c in needed],
                missing_information=missing,
            ),
            needed,
        )

    def _no_match(
        self,
        intent: NormalizedIntent,
        filtered: dict[str, int],
        reason: str,
        sufficiency: Sufficiency,
    ) -> SearchResponse:
        """An explicit no match: no hits, the reason and what is missing."""
        return SearchResponse(
            intent=intent,
            hits=[],
            no_match=True,
            embedder=self.embedder.name,
            no_match_reason=reason,
            filtered=filtered,
            sufficiency=sufficiency,
        )

    def _unperformed(self, norm: Normalized) -> list[Operation]:
        """The operations the intent asks for (not negated) that nothing here performs."""
        terms = set(norm.terms) - set(norm.negated)
        return [
            op
            for op, chinese, english in self._unperformed_asks
            if any(p in norm.raw for p in chinese) or any(t <= terms for t in english)
        ]

    def _rerank(self, request: SearchRequest, out: dict[int, _Candidate]) -> list[_Candidate]:
        """Stage 6: relevance adjusted by desired-output coverage, quality, risk and cost,
        then diversity: no more than :data:`MAX_PER_BRANCH` from one taxonomy leaf ahead of
        the rest."""
        desired = set(request.desired_outputs)
        precision = request.constraints.precision

        def final(c: _Candidate) -> float:
            cap = self.caps[c.index]
            d = cap.descriptor
            score = c.rank
            if desired and cap.produces & desired:
                score += 0.1
                c.why.append("type:produces:" + ",".join(sorted(cap.produces & desired)))
            if precision is not None and precision not in d.execution.quality:
                score *= 0.8
            score *= 1 - 0.02 * RISK_RANK[d.risk.level] - 0.01 * _COST_RANK[d.execution.cost_class]
            return score

        ranked = sorted(
            out.values(), key=lambda c: (-final(c), self.caps[c.index].descriptor.capability_id)
        )
        ahead: list[_Candidate] = []
        behind: list[_Candidate] = []
        per_leaf: dict[str, int] = {}
        for c in ranked:
            leaf = self.caps[c.index].leaf
            per_leaf[leaf] = per_leaf.get(leaf, 0) + 1
            (ahead if per_leaf[leaf] <= MAX_PER_BRANCH else behind).append(c)
        return ahead + behind

    def _sufficiency(
        self, request: SearchRequest, chosen: list[int]
    ) -> tuple[Sufficiency, list[_Candidate]]:
        """Stage 7: breadth-first over produces/accepts from the known types; producers of
        a missing desired type are added from the whole catalog when they can run on what is
        known (``expandedWith``), else the type is reported missing."""
        known = {k.type for k in request.known_inputs}
        desired = set(request.desired_outputs)
        if not known and not desired:
            return Sufficiency(evaluated=False), []
        reachable = set(known)
        usable = set(chosen)
        changed = True
        while changed:
            changed = False
            for i in usable:
                cap = self.caps[i]
                needs = cap.accepts - {"EntitySet"}
                if (not needs or needs & reachable) and not cap.produces <= reachable:
                    reachable |= cap.produces
                    changed = True
        missing = sorted(desired - reachable)
        extra: list[_Candidate] = []
        for t in list(missing):
            producers = [
                i
                for i, cap in enumerate(self.caps)
                if t in cap.produces
                and i not in usable
                and (not (cap.accepts - {"EntitySet"}) or (cap.accepts & reachable))
            ]
            if producers:
                i = producers[0]
                usable.add(i)
                reachable |= self.caps[i].produces
                extra.append(_Candidate(i, relevance=0.0, why=[f"relation:produces:{t}"]))
                missing.remove(t)
        return (
            Sufficiency(
                evaluated=True,
                complete=not missing,
                missing_types=missing,
                expanded_with=[self.caps[c.index].descriptor.capability_id for c in extra],
                missing_information=[f"a way to obtain {t}" for t in missing],
            ),
            extra,
        )

    def _hit(
        self, c: _Candidate, context: SearchContext | None, request: SearchRequest
    ) -> SearchHit:
        d = self.caps[c.index].descriptor
        state, unmet, verdict, reasons = self.applicability(d, context, request)
        why = list(dict.fromkeys(c.why))
        if verdict is not Authorization.ALLOWED:
            why.append(f"policy:{verdict.value}")
        return SearchHit(
            capability_id=d.capability_id,
            profile_version=d.profile_version,
            operation_version=d.target[1],
            kind=d.kind,
            title=d.title,
            summary=d.summary,
            input_types=list(d.inputs.semantic_types),
            output_types=list(d.outputs.semantic_types) if d.outputs else [],
            risk=d.risk.level,
            destructive=d.risk.destructive,
            cost=d.execution.cost_class,
            quality=list(d.execution.quality),
            retrieval_relevance=round(c.relevance, 4),
            runtime_applicability=state,
            unmet_preconditions=unmet,
            authorization=verdict,
            authorization_reasons=reasons,
            why_matched=why or ["relation"],
            handle=f"{d.capability_id}#{d.profile_version}",
        )


def _fit(response: SearchResponse, max_bytes: int | None) -> SearchResponse:
    """Drop hits from the end until the response fits the client's and the server's byte
    limit."""
    limit = min(max_bytes or MAX_RESPONSE_BYTES, MAX_RESPONSE_BYTES)
    hits = list(response.hits)
    while hits and len(canonical_bytes(response.to_wire())) > limit:
        hits.pop()
        response = response.model_copy(update={"hits": hits, "truncated": True})
    return response


def build_index(
    catalog: Any,
    *,
    config: SearchConfig = HYBRID,
    embedder: Embedder | None = None,
    cache: IndexCache | None = None,
) -> SearchIndex:
    """The index of a :class:`~aira_core.catalog.catalog.Catalog`'s production capabilities
    (with their packages' schemas, for input names), its matrices read from ``cache`` when
    it holds them for this very content and embedder."""
    schemas: dict[str, Mapping[str, Any]] = {}
    for package in catalog.packages.values():
        schemas.update(package.manifest.schemas)
    return SearchIndex(
        catalog.capabilities().values(), schemas, config=config, embedder=embedder, cache=cache
    )
