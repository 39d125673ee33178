"""Reproduces, on the ORIGINAL (TF 2.15 + tensorflow-estimator 2.15, graph mode), the numbers
test_determinism.py's `test_unseeded_shuffles_*` compares against: which examples an input_fn
that shuffles without an op seed feeds, with RunConfig(tf_random_seed=3).

TF1 gives an unseeded random op the graph's next op seed (0, 1, ... in the order the graph's
unseeded random ops are built, input_fn's first, then model_fn's), with the graph seed
`tf_random_seed`; every train/evaluate/predict call builds a new graph.

Run: /work/orig/bin/python tests/data/make_shuffle_seed_reference.py
"""
import tempfile

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_v2_behavior()
v1 = tf.compat.v1

N = 8


def input_fn(params):
    """Ids 0..7 shuffled without a seed, then a second unseeded shuffle of the batches."""
    dataset = v1.data.Dataset.range(N).shuffle(N).batch(2)
    return dataset.shuffle(4).map(lambda ids: {"x": tf.cast(ids, tf.float32)})


def predict_input_fn(params):
    return v1.data.Dataset.range(N).shuffle(N).map(
        lambda i: {"x": tf.cast(i, tf.float32)}).batch(2)


def model_fn(features, labels, mode, params):
    x = tf.reshape(features["x"], [-1, 1])
    # an unseeded initializer: TF1 gives it the op seed after input_fn's
    w = v1.get_variable("w", [1, 1], initializer=v1.random_uniform_initializer(-1, 1))
    loss = tf.reduce_mean(tf.square(x * w - x * 0.5 - 1.0))
    if mode == tf.estimator.ModeKeys.PREDICT:
        return v1.estimator.tpu.TPUEstimatorSpec(mode, predictions={"x": features["x"]})
    train_op = v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=v1.train.get_global_step())
    return v1.estimator.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def estimator_model_fn(features, labels, mode, params):
    spec = model_fn(features, labels, mode, params)
    return spec.as_estimator_spec()


def run(kind):
    model_dir = tempfile.mkdtemp()
    if kind == "Estimator":
        estimator = tf.estimator.Estimator(
            estimator_model_fn, config=tf.estimator.RunConfig(model_dir=model_dir,
                                                              tf_random_seed=3))
        wrap = lambda fn: (lambda: fn({}))  # noqa: E731
    else:
        estimator = v1.estimator.tpu.TPUEstimator(
            model_fn, use_tpu=False, train_batch_size=2, eval_batch_size=2,
            predict_batch_size=2,
            config=v1.estimator.tpu.RunConfig(model_dir=model_dir, tf_random_seed=3))
        wrap = lambda fn: fn  # noqa: E731
    print(kind)
    estimator.train(wrap(input_fn), steps=1)  # 1 step: w's initial value after one batch
    print("  w after 1 step:", estimator.get_variable_value("w").ravel().tolist())
    estimator.train(wrap(input_fn), steps=4)
    print("  w after 1+4 steps:", estimator.get_variable_value("w").ravel().tolist())
    print("  eval loss (2 batches):", float(estimator.evaluate(wrap(input_fn), steps=2)["loss"]))
    print("  predicted order:",
          [int(p["x"]) for p in estimator.predict(wrap(predict_input_fn))])


if __name__ == "__main__":
    np.set_printoptions(precision=17)
    run("Estimator")
    run("TPUEstimator")
