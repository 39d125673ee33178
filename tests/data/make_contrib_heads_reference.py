"""Prints the original's numbers of tests/contrib_head_scenarios.py, the literals of
tests/test_contrib_estimator.py. Runs under TF 2.15.1 + tensorflow-estimator 2.15 in graph
mode, with TF 1.15's `tf.contrib.estimator` head modules (head.py, multi_head.py) loaded
from the unpacked tensorflow-estimator 1.15.1 wheel (TensorFlow 2.15 has no contrib):

    pip download tensorflow-estimator==1.15.1 --no-deps -d /tmp/te115
    (cd /tmp/te115 && unzip -q tensorflow_estimator-1.15.1-*.whl)
    /work/orig/bin/python tests/data/make_contrib_heads_reference.py /tmp/te115
"""
import importlib.util
import os
import pprint
import sys
import tempfile
import types

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import contrib_head_scenarios  # noqa: E402  pylint: disable=wrong-import-position


def _load(wheel_dir, name):
    path = os.path.join(wheel_dir, "tensorflow_estimator/contrib/estimator/python/estimator",
                        f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"tf115_contrib_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rounded(value):
    value = np.asarray(value)
    if value.dtype.kind in "SUO":
        return [v.decode() if isinstance(v, bytes) else v for v in value.ravel().tolist()]
    if value.dtype.kind in "iub":
        return value.ravel().tolist()
    return [float(f"{v:.7g}") for v in value.ravel()]


def contrib_heads(wheel_dir):
    """TF 1.15's `tf.contrib.estimator` head factories, from the unpacked wheel."""
    head, multi_head = _load(wheel_dir, "head"), _load(wheel_dir, "multi_head")
    return types.SimpleNamespace(
        **{name: getattr(head, name) for name in (
            "binary_classification_head", "multi_class_head", "multi_label_head",
            "regression_head", "poisson_regression_head", "logistic_regression_head")},
        multi_head=multi_head.multi_head)


def main(wheel_dir):
    tf.compat.v1.disable_v2_behavior()
    contrib = contrib_heads(wheel_dir)
    numbers = {}
    for scenario in contrib_head_scenarios.SCENARIOS:
        weights, metrics, predictions = contrib_head_scenarios.run(
            contrib, tf.compat.v1.estimator, scenario,
            tempfile.mkdtemp(prefix=f"{scenario}_"))
        numbers[scenario] = {
            "weights": {k: _rounded(v) for k, v in weights.items()},
            "metrics": {k: float(f"{v:.7g}") for k, v in sorted(metrics.items())},
            "predictions": {"/".join(k) if isinstance(k, tuple) else k:
                            _rounded([p[k] for p in predictions])
                            for k in sorted(predictions[0], key=str)}}
    print("ORIGINAL = ", end="")
    pprint.pprint(numbers, width=100, compact=True)


if __name__ == "__main__":
    main(sys.argv[1])
