"""Text models compared on the same data: is there a better way to read issue texts than distdx's?

Every approach sees the same input (a case's context and log) and the same labels, and is scored on
the corpus's frozen test split (trained on dev + corpus train) and by 5-fold cross-validation over dev +
corpus train:

- distdx: the whole engine (rules, phase markers, TF-IDF neighbours and naive Bayes over the index,
  priors), leave-one-out on the index, as `distdx eval` runs it;
- kNN vote: cosine TF-IDF on words, the five nearest cases vote with their similarity;
- logistic regression and a linear SVM on TF-IDF word 1-2-grams plus character 3-5-grams;
- with `wordllama` installed (an offline static embedding model whose 256-d weights ship in its wheel;
  `pip install wordllama==0.4.0.post1`, not a dependency of distdx): the five nearest cases by cosine
  of the embeddings vote, a logistic regression on the embeddings, and one on words + chars +
  embeddings: whether an embedding model that runs on CPU earns a place;
- blend: the engine's scores (normalised to sum to one) mixed with the logistic regression's
  probabilities, the mixing weight chosen per dimension by the 5-fold cross-validation (out-of-fold
  probabilities against the engine's leave-one-out scores), then scored on the test split: whether the
  linear model adds anything to the engine.

The linear models need scikit-learn (`pip install -e '.[dev]'`); they are a yardstick here, not part
of distdx.

    python benchmarks/bench_textmodels.py [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
from sklearn.pipeline import make_union
from sklearn.svm import LinearSVC

from distdx.diagnose.engine import diagnose
from distdx.diagnose.evaluate import case_input, evaluate
from distdx.knowledge.known_issues import read_cases
from distdx.knowledge.taxonomy import DIMENSIONS

ROOT = Path(__file__).resolve().parents[1]
DEV, CORPUS = ROOT / "corpus" / "dev.jsonl", ROOT / "corpus" / "cases.jsonl"


def word_char():
    return make_union(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
                      TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, min_df=2))


def linear(model):
    def fit_predict(train_x, train_y, test_x):
        features = word_char()
        clf = model().fit(features.fit_transform(train_x), train_y)
        return clf.predict(features.transform(test_x))
    return fit_predict


def nearest_vote(sims, train_y, k=5):
    """Per row of similarities (test x train), the label of the k nearest train cases, similarity-weighted."""
    out = []
    for row in sims:
        votes: dict[str, float] = {}
        for i in np.argsort(-row)[:k]:
            votes[train_y[i]] = votes.get(train_y[i], 0.0) + row[i]
        out.append(max(votes, key=votes.get))
    return np.array(out)


def knn_vote(train_x, train_y, test_x, k=5):
    vec = TfidfVectorizer(sublinear_tf=True)
    known = vec.fit_transform(train_x)
    return nearest_vote((vec.transform(test_x) @ known.T).toarray(), train_y, k)


APPROACHES = {
    "kNN vote (TF-IDF words)": knn_vote,
    "logistic regression (words + chars)": linear(lambda: LogisticRegression(C=10, max_iter=3000)),
    "linear SVM (words + chars)": linear(lambda: LinearSVC(C=0.5)),
}


def embedding_approaches() -> dict:
    """The approaches on WordLlama's static embeddings, or none when it is not installed."""
    try:
        import wordllama
        from scipy.sparse import csr_matrix, hstack
    except ImportError:
        return {}
    # The wheel ships its weights and tokenizer under the package; pointing the cache there keeps it
    # offline (its default cache looks for the tokenizer in a folder the wheel does not have).
    model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent)

    def embed(texts):
        return model.embed(list(texts))

    def knn(train_x, train_y, test_x, k=5):
        return nearest_vote(embed(test_x) @ embed(train_x).T, train_y, k)

    def logistic(train_x, train_y, test_x):
        return LogisticRegression(C=1, max_iter=3000).fit(embed(train_x), train_y).predict(embed(test_x))

    def combined(train_x, train_y, test_x):
        features = word_char()
        train = hstack([features.fit_transform(train_x), csr_matrix(embed(train_x))]).tocsr()
        test = hstack([features.transform(test_x), csr_matrix(embed(test_x))]).tocsr()
        return LogisticRegression(C=10, max_iter=3000).fit(train, train_y).predict(test)

    return {"kNN vote (WordLlama embeddings)": knn, "logistic regression (WordLlama embeddings)": logistic,
            "logistic regression (words + chars + WordLlama)": combined}


def engine_scores(cases: list[dict], leave_one_out: bool) -> list[dict[str, dict[str, float]]]:
    """Per case and dimension the engine's hypotheses, scores normalised to sum to one."""
    from distdx.logs import parse_text

    out = []
    for c in cases:
        excluded = frozenset({str(c["id"])}) if leave_one_out else frozenset()
        d = diagnose(parse_text(case_input(c), source=str(c["id"])), exclude_ids=excluded)
        per = {}
        for dim in DIMENSIONS:
            total = sum(h.score for h in d.classification[dim]) or 1.0
            per[dim] = {h.id: h.score / total for h in d.classification[dim]}
        out.append(per)
    return out


def blended_top1(engine: list[dict[str, float]], linear: list[dict[str, float]], gold, weight: float) -> float:
    right = 0
    for e, p, g in zip(engine, linear, gold):
        mixed = {k: (1 - weight) * e.get(k, 0.0) + weight * p.get(k, 0.0) for k in set(e) | set(p)}
        right += max(sorted(mixed), key=mixed.get) == g
    return right / len(gold)


def blend(pool: list[dict], test: list[dict], x, x_test, folds) -> dict[str, dict[str, float]]:
    engine_pool, engine_test = engine_scores(pool, True), engine_scores(test, False)
    out = {}
    for dim in DIMENSIONS:
        y = np.array([str(c["labels"][dim]) for c in pool])
        y_test = [str(c["labels"][dim]) for c in test]
        oof: list[dict[str, float]] = [{} for _ in pool]
        for a, b in folds:
            features = word_char()
            clf = LogisticRegression(C=10, max_iter=3000).fit(features.fit_transform(x[a]), y[a])
            for i, row in zip(b, clf.predict_proba(features.transform(list(x[b])))):
                oof[i] = dict(zip(clf.classes_, row))
        grid = [w / 10 for w in range(11)]
        cv = {w: blended_top1([e[dim] for e in engine_pool], oof, y, w) for w in grid}
        weight = max(grid, key=lambda w: (cv[w], -w))
        features = word_char()
        clf = LogisticRegression(C=10, max_iter=3000).fit(features.fit_transform(x), y)
        on_test = [dict(zip(clf.classes_, row)) for row in clf.predict_proba(features.transform(x_test))]
        out[dim] = {"test": blended_top1([e[dim] for e in engine_test], on_test, y_test, weight), "cv": cv[weight],
                    "weight": weight}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pool = read_cases(DEV) + [c for c in read_cases(CORPUS) if c.get("split") == "train"]
    test = [c for c in read_cases(CORPUS) if c.get("split") == "test"]
    x, x_test = np.array([case_input(c) for c in pool], dtype=object), [case_input(c) for c in test]
    table: dict[str, dict[str, dict[str, float]]] = {}

    engine_test = evaluate(CORPUS, split="test")
    engine_dev, engine_train = evaluate(DEV), evaluate(CORPUS, split="train")
    n_dev, n_train = engine_dev.cases, engine_train.cases
    table["distdx engine"] = {dim: {
        "test": engine_test.dimensions[dim].top1,
        "cv": (engine_dev.dimensions[dim].top1 * n_dev + engine_train.dimensions[dim].top1 * n_train) / (n_dev + n_train),
    } for dim in DIMENSIONS}

    folds = list(KFold(5, shuffle=True, random_state=0).split(x))
    embeddings = embedding_approaches()
    for name, fit_predict in {**APPROACHES, **embeddings}.items():
        table[name] = {}
        for dim in DIMENSIONS:
            y = np.array([str(c["labels"][dim]) for c in pool])
            y_test = np.array([str(c["labels"][dim]) for c in test])
            on_test = float(np.mean(fit_predict(list(x), y, x_test) == y_test))
            right = sum(int(np.sum(fit_predict(list(x[a]), y[a], list(x[b])) == y[b])) for a, b in folds)
            table[name][dim] = {"test": on_test, "cv": right / len(pool)}
    table["blend: engine + logistic regression (weight by CV)"] = blend(pool, test, x, x_test, folds)
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"top-1 on the corpus test split ({len(test)} cases) / 5-fold CV over dev + corpus train ({len(pool)} cases);")
    print("distdx's CV column is its leave-one-out figure on the same cases")
    print("" if embeddings else "(wordllama is not installed: the embedding rows are left out)\n")
    print("| approach | " + " | ".join(DIMENSIONS) + " |")
    print("|---|" + "---|" * len(DIMENSIONS))
    for name, dims in table.items():
        print(f"| {name} | " + " | ".join(f"{d['test']:.3f} / {d['cv']:.3f}" + (f" (w {d['weight']:.1f})" if "weight" in d
                                                                            else "") for d in dims.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
