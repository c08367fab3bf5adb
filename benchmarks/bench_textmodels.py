"""Text models compared on the same data: is there a better way to read issue texts than distdx's?

Every approach sees the same input (a case's context and log) and the same labels, and is scored on
the corpus's frozen test split (trained on dev + corpus train) and by 5-fold cross-validation over dev +
corpus train:

- distdx: the whole engine (rules, phase markers, TF-IDF neighbours and naive Bayes over the index,
  priors), leave-one-out on the index, as `distdx eval` runs it;
- kNN vote: cosine TF-IDF on words, the five nearest cases vote with their similarity;
- logistic regression and a linear SVM on TF-IDF word 1-2-grams plus character 3-5-grams.

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


def knn_vote(train_x, train_y, test_x, k=5):
    vec = TfidfVectorizer(sublinear_tf=True)
    known = vec.fit_transform(train_x)
    sims = (vec.transform(test_x) @ known.T).toarray()
    out = []
    for row in sims:
        votes: dict[str, float] = {}
        for i in np.argsort(-row)[:k]:
            votes[train_y[i]] = votes.get(train_y[i], 0.0) + row[i]
        out.append(max(votes, key=votes.get))
    return np.array(out)


APPROACHES = {
    "kNN vote (TF-IDF words)": knn_vote,
    "logistic regression (words + chars)": linear(lambda: LogisticRegression(C=10, max_iter=3000)),
    "linear SVM (words + chars)": linear(lambda: LinearSVC(C=0.5)),
}


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
    for name, fit_predict in APPROACHES.items():
        table[name] = {}
        for dim in DIMENSIONS:
            y = np.array([str(c["labels"][dim]) for c in pool])
            y_test = np.array([str(c["labels"][dim]) for c in test])
            on_test = float(np.mean(fit_predict(list(x), y, x_test) == y_test))
            right = sum(int(np.sum(fit_predict(list(x[a]), y[a], list(x[b])) == y[b])) for a, b in folds)
            table[name][dim] = {"test": on_test, "cv": right / len(pool)}
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"top-1 on the corpus test split ({len(test)} cases) / 5-fold CV over dev + corpus train ({len(pool)} cases);")
    print("distdx's CV column is its leave-one-out figure on the same cases\n")
    print("| approach | " + " | ".join(DIMENSIONS) + " |")
    print("|---|" + "---|" * len(DIMENSIONS))
    for name, dims in table.items():
        print(f"| {name} | " + " | ".join(f"{d['test']:.3f} / {d['cv']:.3f}" for d in dims.values()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
