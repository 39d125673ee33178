"""Prints the original's numbers of `tests/canned_scenarios.py`'s `head_estimators`, the
literals HEAD_ESTIMATORS_* of tests/test_canned_estimators.py, and writes the checkpoint
fixture `tests/data/head_estimator_ckpt/` (the DNNEstimator's on multi_label_head): TF 1.15's v1
`DNNEstimator`, `LinearEstimator`, `DNNLinearCombinedEstimator` and `BaselineEstimator`
(`tf.compat.v1.estimator`'s under TF 2.15.1 + tensorflow-estimator 2.15, graph mode) on TF
1.15's `tf.contrib.estimator` heads, loaded from the unpacked tensorflow-estimator 1.15.1
wheel as tests/data/make_contrib_heads_reference.py does:

    /work/orig/bin/python tests/data/make_head_estimators_reference.py /tmp/te115
"""
import os
import pprint
import sys
import tempfile

import numpy as np
import tensorflow as tf

DATA_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(DATA_DIR))
sys.path.insert(0, DATA_DIR)

import canned_scenarios  # noqa: E402  pylint: disable=wrong-import-position
import make_contrib_heads_reference  # noqa: E402  pylint: disable=wrong-import-position
from make_canned_reference import copy_checkpoint  # noqa: E402  pylint: disable=C0413

CKPT_DIR = os.path.join(DATA_DIR, "head_estimator_ckpt")
CKPT_SCENARIO = "dnn_estimator_multi_label"


def _rounded(values):
    values = np.asarray(values)
    if values.dtype.kind in "SUO":
        return [v.decode() if isinstance(v, bytes) else v for v in values.ravel().tolist()]
    if values.dtype.kind in "iub":
        return values.ravel().tolist()
    return [float(f"{v:.8g}") for v in values.ravel()]


def main(wheel_dir):
    tf.compat.v1.disable_v2_behavior()
    contrib = make_contrib_heads_reference.contrib_heads(wheel_dir)
    numbers, names = {}, {}
    for scenario, (estimator, labels) in canned_scenarios.head_estimators(
            tf.compat.v1.estimator, contrib, tempfile.mkdtemp()).items():
        trained, names[scenario], metrics, predictions = (
            canned_scenarios.train_evaluate_and_predict(estimator, labels))
        numbers[scenario] = {
            "weights": {name: _rounded(value) for name, value in trained.items()},
            "metrics": {key: float(f"{value:.8g}") for key, value in metrics.items()},
            "predictions": {key: _rounded(value) for key, value in sorted(predictions.items())}}
        if scenario == CKPT_SCENARIO:
            copy_checkpoint(estimator.model_dir, canned_scenarios.TRAIN_STEPS, CKPT_DIR)
    print("HEAD_ESTIMATORS_CHECKPOINT_NAMES = ", end="")
    pprint.pprint(names, width=100, compact=True)
    print("HEAD_ESTIMATORS_ORIGINAL = ", end="")
    pprint.pprint(numbers, width=100, compact=True)


if __name__ == "__main__":
    main(sys.argv[1])
