"""A small, deterministic text model over the known-issue index.

TF-IDF vectors (sublinear term frequency, unigrams and bigrams of normalised tokens) and cosine
similarity; the labels of the nearest known issues vote, weighted by similarity. It explains the
inputs no signature rule covers (prose issue texts, unseen messages) and supplies "similar known
issues". Pure Python: the index is a few hundred documents, so this stays in milliseconds.

Leave-one-out is built in: :meth:`TextModel.neighbours` takes ids and a fingerprint to exclude, so
an issue is never its own evidence (``distdx eval`` excludes each case; ``diagnose`` excludes a
known issue whose text is exactly the input).
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache, reduce
from itertools import repeat
from operator import add, mul

from distdx.knowledge.known_issues import KnownIssue, load_known_issues
from distdx.knowledge.rules import Rule, load_rules
from distdx.knowledge.taxonomy import DIMENSIONS, UNKNOWN, taxonomy

_TOKEN = re.compile(r"[a-z][a-z0-9_]+|\d+(?:\.\d+)+")
_NOISE = re.compile(r"(?:/[\w.\-]+){2,}/?|0x[0-9a-f]+|\b[0-9a-f]{12,}\b", re.I)
_STOP = frozenset(
    """the and for with that this from are was were but not you your have has had when then than they
    them its into out all any can could would should will just also only some more most such other
    after before while about which what there their been being does did doing using used use user
    one two get got see seems like same very here file line self none true false return""".split()
)
MAX_DOC_CHARS = 20000
NEIGHBOURS = 10
NB_TEMPERATURE = 1.0


_SUFFIXES = ("ations", "ation", "ings", "ing", "ied", "ies", "ed", "es", "ly", "s")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light suffix stripper: 'hangs', 'hanging' -> 'hang'; identifiers with '_' or digits are kept."""
    if "_" in word or any(ch.isdigit() for ch in word):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=32)
def tokens(text: str) -> tuple[str, ...]:
    """Normalised unigrams, then bigrams (``a~b``). Kept for the last texts: a diagnosis asks for the
    input's tokens six times (neighbours, each dimension's posterior, the exact-match check)."""
    text = _NOISE.sub(" ", text[:MAX_DOC_CHARS].lower())
    words = [stem(w) for w in _TOKEN.findall(text) if w not in _STOP and len(w) < 40]
    return (*words, *(f"{a}~{b}" for a, b in zip(words, words[1:])))


@dataclass(frozen=True)
class Neighbour:
    issue: KnownIssue
    similarity: float


class TextModel:
    def __init__(self, issues: tuple[KnownIssue, ...]) -> None:
        self.issues = issues
        counts = [Counter(tokens(f"{i.title}\n{i.summary}\n{i.errors}")) for i in issues]
        df: Counter[str] = Counter()
        for c in counts:
            df.update(c.keys())
        n = max(len(issues), 1)
        self.idf = {t: math.log((1 + n) / (1 + d)) + 1.0 for t, d in df.items()}
        # every document's vector as its terms and their weights, in the vector's order; each term is
        # the one string object the idf table holds, so the knowledge cache stores it once and the
        # model loads in a fraction of the time a dict per document takes (the sums are unchanged)
        term = {t: t for t in self.idf}
        vectors = [self._weigh(c) for c in counts]
        self._terms = [tuple(term[t] for t in v) for v in vectors]
        self._weights = [array("d", v.values()) for v in vectors]
        # naive Bayes over the presence of unigrams, per dimension and label
        words = [frozenset(term[t] for t in c if "~" not in t) for c in counts]
        self._vocab = frozenset().union(*words) if words else frozenset()
        self._label_words: dict[str, dict[str, Counter[str]]] = {d: {} for d in DIMENSIONS}
        self._label_docs: dict[str, Counter[str]] = {d: Counter() for d in DIMENSIONS}
        for issue, doc_words in zip(issues, words):
            for dim in DIMENSIONS:
                label = issue.labels.get(dim, UNKNOWN)
                if label == UNKNOWN:
                    continue
                self._label_words[dim].setdefault(label, Counter()).update(doc_words)
                self._label_docs[dim][label] += 1
        self._label_totals = {d: {label: sum(c.values()) for label, c in by_label.items()}
                              for d, by_label in self._label_words.items()}

    def _weigh(self, counts: Counter[str]) -> dict[str, float]:
        vec = {t: (1 + math.log(c)) * self.idf[t] for t, c in counts.items() if t in self.idf}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {t: v / norm for t, v in vec.items()}

    def neighbours(
        self,
        text: str,
        *,
        exclude_ids: frozenset[str] = frozenset(),
        exclude_fingerprint: str | None = None,
        k: int = NEIGHBOURS,
    ) -> list[Neighbour]:
        query = self._weigh(Counter(tokens(text)))
        size = len(query)
        scored = []
        for issue, terms, weights in zip(self.issues, self._terms, self._weights):
            if issue.id in exclude_ids or (exclude_fingerprint and issue.fingerprint == exclude_fingerprint):
                continue
            if query.keys().isdisjoint(terms):
                continue  # no term in common: similarity 0
            # the dot product summed over the shorter vector, in its order (map: the same products
            # and sum as a generator expression, without a Python step per term)
            if size < len(terms):
                vec = dict(zip(terms, weights))
                sim = sum(map(mul, query.values(), map(vec.get, query.keys(), repeat(0.0))))
            else:
                sim = sum(map(mul, weights, map(query.get, terms, repeat(0.0))))
            if sim > 0:
                scored.append(Neighbour(issue, sim))
        scored.sort(key=lambda nb: (-nb.similarity, nb.issue.id))
        return scored[:k]


    def posterior(self, text: str, dimension: str, *, exclude_ids: frozenset[str] = frozenset(),
                  alpha: float = 0.5, temperature: float = NB_TEMPERATURE) -> dict[str, float]:
        """Naive-Bayes label distribution; excluded issues are subtracted (leave-one-out)."""
        words = {t for t in tokens(text) if "~" not in t} & self._vocab
        if not words:
            return {}
        # leave-one-out: the excluded issues' words come off their labels' counts
        left_out: dict[str, list[frozenset[str]]] = {}
        if exclude_ids:
            for issue, terms in zip(self.issues, self._terms):
                label = issue.labels.get(dimension, UNKNOWN)
                if issue.id in exclude_ids and label != UNKNOWN:
                    left_out.setdefault(label, []).append(frozenset(t for t in terms if "~" not in t))
        vocab = len(self._vocab)
        logp = {}
        for label, counter in self._label_words[dimension].items():
            out = left_out.get(label, ())
            if self._label_docs[dimension][label] - len(out) <= 0:
                continue
            total = self._label_totals[dimension][label] - sum(len(d) for d in out)
            denominator = total + alpha * vocab
            if out:
                counts = [counter[w] - sum(1 for d in out if w in d) for w in words]
            else:
                counts = list(map(counter.get, words, repeat(0)))
            # no class prior: the engine adds the study's shares itself, once; the log-likelihoods
            # are added one after another from 0.0 (reduce, not sum: sum() rounds otherwise on 3.12+)
            logp[label] = reduce(add, map(math.log, [(count + alpha) / denominator for count in counts]), 0.0)
        if not logp:
            return {}
        top = max(logp.values())
        scale = temperature * math.sqrt(len(words))
        raw = {k: math.exp((v - top) / scale) for k, v in logp.items()}
        total = sum(raw.values())
        return {k: v / total for k, v in raw.items()}


def vote(neighbours: list[Neighbour], dimension: str) -> dict[str, float]:
    """Similarity-weighted label votes of the neighbours, normalised."""
    votes: Counter[str] = Counter()
    for nb in neighbours:
        label = nb.issue.labels.get(dimension, UNKNOWN)
        if label != UNKNOWN:
            votes[label] += nb.similarity
    total = sum(votes.values())
    return {k: v / total for k, v in votes.items()} if total else {}


RULE_DOC_PREFIX = "rule:"


def rule_documents(rules: tuple[Rule, ...]) -> tuple[KnownIssue, ...]:
    """Each signature rule as a labelled pseudo-document (title, explanation, fixtures), so the
    text model knows the vocabulary of every category, not only of the indexed issues. They vote
    on stage, symptom and root cause. Their ids
    start with ``rule:``; they vote but are never shown as known issues. ``preview`` rules (mined
    from a framework's sources, not yet seen in a real issue) fire on their message but stay out
    of the text model until promoted: measured on the labelled cases, their explanations moved
    prose inputs without any of them firing."""
    docs = []
    for rule in rules:
        if rule.status == "preview":
            continue
        targets = {"stage": rule.stages, "symptom": rule.symptoms, "root_cause": rule.root_causes,
                   "fix_pattern": rule.fix_patterns}
        labels = {dim: max(w, key=w.get) for dim, w in targets.items()}
        # how an issue got fixed is learnt from real issues only: a rule's favourite fix is the
        # usual remedy for its message, and most rules favour F3, which would swamp the rest
        labels["fix_pattern"] = UNKNOWN
        docs.append(KnownIssue(
            id=RULE_DOC_PREFIX + rule.code, url="", framework="", title=rule.title,
            summary=rule.why, errors="\n".join(rule.fixtures_match)[:4000], labels=labels,
            source=rule.source,
        ))
    return tuple(docs)


TAXONOMY_DOC_PREFIX = "taxonomy:"


def taxonomy_documents() -> tuple[KnownIssue, ...]:
    """Each symptom's and root cause's name and meaning as a labelled pseudo-document: the words
    of the study's own definitions (e.g. "inference", "launcher", "checkpoint") for every node."""
    tax = taxonomy()
    docs = []
    for node in tax.nodes.values():
        if node.dimension not in ("symptom", "root_cause"):
            continue
        labels = {"stage": node.stage or UNKNOWN, "symptom": UNKNOWN, "root_cause": UNKNOWN, "fix_pattern": UNKNOWN}
        labels[node.dimension] = node.id
        docs.append(KnownIssue(id=TAXONOMY_DOC_PREFIX + node.id, url="", framework="", title=node.name,
                               summary=node.meaning or "", errors="", labels=labels, source="taxonomy.yaml"))
    return tuple(docs)


@lru_cache(maxsize=1)
def default_model() -> TextModel:
    """The model over the installed index, the rules and the taxonomy; built once per version of
    those files and then read from the knowledge cache."""
    from importlib import resources

    from distdx.paths import cached
    from distdx.knowledge.known_issues import index_texts
    from distdx.knowledge.rules import rule_files

    data = resources.files("distdx.knowledge")
    inputs = [*(t.encode() for t in index_texts()), data.joinpath("taxonomy.yaml").read_bytes(),
              *(b for _, b in rule_files())]
    return cached("textmodel", inputs,
                  lambda: TextModel(load_known_issues() + rule_documents(load_rules()) + taxonomy_documents()))


__all__ = ["DIMENSIONS", "Neighbour", "TextModel", "default_model", "tokens", "vote"]
