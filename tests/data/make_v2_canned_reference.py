"""Prints the original's numbers of tests/v2_canned_scenarios.py, the literals of
tests/test_v2_canned_estimators.py, and writes the DNNClassifier checkpoint fixture
`tests/data/v2_canned_dnn_ckpt/` (run from the repository root, under TF 2.15.1 +
tensorflow-estimator 2.15, TF2 behaviour as TF 2.x programs had it):

    /work/orig/bin/python tests/data/make_v2_canned_reference.py

With `--restore DIR` it instead restores the dnn_binary checkpoint this package wrote in
DIR (the other way of the interchange), prints the original's logits of the first batch
from it, and trains one more step on it.
"""
import os
import pprint
import shutil
import sys
import tempfile

import numpy as np
import tensorflow as tf

DATA_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(DATA_DIR))

import v2_canned_scenarios as scenarios  # noqa: E402  pylint: disable=wrong-import-position
from make_canned_reference import copy_checkpoint  # noqa: E402  pylint: disable=C0413

CKPT_DIR = os.path.join(DATA_DIR, "v2_canned_dnn_ckpt")


def _plain(value):
    value = np.asarray(value)
    if value.dtype.kind in "SO":
        return [v.decode() for v in value.ravel()]
    if value.dtype.kind == "f":
        return [float(f"{v:.8g}") for v in value.ravel()]
    return [int(v) for v in value.ravel()]


def main():
    model_dir = tempfile.mkdtemp()
    numbers = {}
    for scenario, (estimator, labels) in scenarios.estimators(tf, model_dir).items():
        print(scenario, file=sys.stderr)
        result = scenarios.run(tf, scenario, estimator, labels)
        numbers[scenario] = {
            "variables": {name: (list(value.shape), _plain(value))
                          for name, value in sorted(result["variables"].items())},
            "metrics": {key: float(f"{value:.8g}") for key, value in
                        sorted(result["metrics"].items())},
            "predictions": {key: [_plain(v) for v in values] for key, values in
                            sorted(result["predictions"].items())}}
        if scenario == "dnn_binary":
            copy_checkpoint(estimator.model_dir, scenarios.TRAIN_STEPS, CKPT_DIR)
    print("ORIGINAL = ", end="")
    pprint.pprint(numbers, width=100, compact=True)


def restore(model_dir):
    parent = tempfile.mkdtemp()
    shutil.copytree(model_dir, os.path.join(parent, "dnn_binary"))
    estimator, labels = scenarios.estimators(tf, parent)["dnn_binary"]
    predictions = list(estimator.predict(scenarios.predict_input_fn(tf, "dnn_binary")))[:4]
    print("logits:", _plain([p["logits"] for p in predictions]))
    estimator.train(scenarios.input_fn(tf, "dnn_binary", labels), steps=1)
    print("global_step:", estimator.get_variable_value("global_step"))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--restore"]:
        restore(sys.argv[2])
    else:
        main()
