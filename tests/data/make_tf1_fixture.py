"""Writes the TF1 reference checkpoint fixture (run from the repository root).

Trains `tests/tf1_reference_model.build_reference_graph` for a few steps in TF1 graph mode
(`tf.Graph` + `tf.compat.v1.Session`, fixed seeds) and saves it with
`tf.compat.v1.train.Saver` into `tests/data/tf1_reference_ckpt/`, plus
`tests/data/tf1_reference_names.json` with the sorted variable names, shapes and dtypes.

    /tmp/venv/bin/python tests/data/make_tf1_fixture.py
"""
import json
import os
import random
import shutil
import sys

import numpy as np
import tensorflow as tf

DATA_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(DATA_DIR))

import tf1_reference_model  # noqa: E402  pylint: disable=wrong-import-position

CKPT_DIR = os.path.join(DATA_DIR, "tf1_reference_ckpt")
NAMES_FILE = os.path.join(DATA_DIR, "tf1_reference_names.json")
SEED = 1234
BATCH_SIZE = 16
TRAIN_STEPS = 3


def reference_batch(seed=SEED):
    """A fixed batch: features {'x': [16, 4] float32}, labels [16] int32."""
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(BATCH_SIZE, tf1_reference_model.NUM_FEATURES)).astype(np.float32)
    y = rng.randint(0, tf1_reference_model.NUM_CLASSES, size=BATCH_SIZE).astype(np.int32)
    return {"x": x}, y


def main():
    features, labels = reference_batch()
    shutil.rmtree(CKPT_DIR, ignore_errors=True)
    with tf.Graph().as_default():
        # tf_keras draws the op seeds of its default initializers from Python's RNG.
        random.seed(SEED)
        np.random.seed(SEED)
        tf.compat.v1.set_random_seed(SEED)
        loss, train_op = tf1_reference_model.build_reference_graph(
            {"x": tf.constant(features["x"])}, tf.constant(labels))
        saver = tf.compat.v1.train.Saver(save_relative_paths=True)
        global_variables = tf.compat.v1.global_variables()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            losses = [float(sess.run([train_op, loss])[1]) for _ in range(TRAIN_STEPS)]
            step = sess.run(tf.compat.v1.train.get_global_step())
            path = saver.save(sess, os.path.join(CKPT_DIR, "model.ckpt"), global_step=step,
                              write_meta_graph=False)
    specs = sorted((v.op.name, v.shape.as_list(), v.dtype.base_dtype.name)
                   for v in global_variables)
    lines = [f'  {json.dumps(name)}: {{"shape": {shape}, "dtype": "{dtype}"}}'
             for name, shape, dtype in specs]
    with open(NAMES_FILE, "w") as f:
        f.write(f'{{"global_step": {int(step)}, "seed": {SEED}, "losses": {json.dumps(losses)},\n'
                ' "variables": {\n' + ",\n".join(lines) + "\n }\n}\n")
    print(f"wrote {path} ({len(specs)} variables, losses {losses}) and {NAMES_FILE}")


if __name__ == "__main__":
    main()
