"""Prints the original's numbers of tests/canned_scenarios.py, the literals of
tests/test_canned_estimators.py, and writes the DNNClassifier checkpoint fixture
`tests/data/canned_dnn_ckpt/` (run from the repository root, under TF 2.15.1 +
tensorflow-estimator 2.15 in graph mode):

    /work/orig/bin/python tests/data/make_canned_reference.py
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

import canned_scenarios  # noqa: E402  pylint: disable=wrong-import-position

CKPT_DIR = os.path.join(DATA_DIR, "canned_dnn_ckpt")


def _rounded(values):
    return [float(f"{v:.8g}") for v in np.ravel(values)]


def copy_checkpoint(model_dir, step, target):
    """`model_dir`'s checkpoint of `step` alone into `target` (a fixture directory)."""
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    prefix = f"model.ckpt-{step}"
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(os.path.join(model_dir, prefix + suffix), target)
    with open(os.path.join(target, "checkpoint"), "w", encoding="utf-8") as f:
        f.write(f'model_checkpoint_path: "{prefix}"\n'
                f'all_model_checkpoint_paths: "{prefix}"\n')


def main():
    tf.config.set_logical_device_configuration(  # two CPUs for the MirroredStrategy run
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    tf.compat.v1.disable_v2_behavior()
    model_dir = tempfile.mkdtemp()
    numbers, names = {}, {}
    for scenario, (estimator, labels) in canned_scenarios.estimators(
            tf.compat.v1.estimator, model_dir).items():
        trained, names[scenario], metrics = canned_scenarios.train_and_evaluate(
            estimator, labels)
        numbers[scenario] = {
            "weights": {name: _rounded(value) for name, value in trained.items()},
            "metrics": {key: float(f"{value:.8g}") for key, value in metrics.items()}}
        if scenario == "dnn_binary":
            predictions = list(estimator.predict(canned_scenarios.predict_input_fn))
            numbers[scenario]["logistic"] = _rounded([p["logistic"] for p in predictions])
            copy_checkpoint(estimator.model_dir, canned_scenarios.TRAIN_STEPS, CKPT_DIR)
    mirrored = canned_scenarios.mirrored_dnn_classifier(
        tf.compat.v1.estimator, os.path.join(model_dir, "mirrored"),
        tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))
    trained, names["dnn_binary_mirrored"], metrics = canned_scenarios.train_and_evaluate(
        mirrored, "binary")
    numbers["dnn_binary_mirrored"] = {
        "weights": {name: _rounded(value) for name, value in trained.items()},
        "metrics": {key: float(f"{value:.8g}") for key, value in metrics.items()}}
    print("CHECKPOINT_NAMES = ", end="")
    pprint.pprint(names, width=100, compact=True)
    print("ORIGINAL = ", end="")
    pprint.pprint(numbers, width=100, compact=True)


if __name__ == "__main__":
    main()
