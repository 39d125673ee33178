"""Shared set-up of the inference benches (`eval_throughput.py`, `predict_throughput.py`).

The model is a small MNIST CNN written as a TF1 model_fn (tf_keras legacy layers); the
baseline is the same forward pass hand-written in TF2 (`tf.nn` ops in a `tf.function` over the
dataset, `strategy.run` per batch) on variables restored from the estimator's checkpoint, so
both compute exactly the same numbers on the same strategy and data.
"""
import argparse
import importlib
import tempfile

import numpy as np

IMAGE_SHAPE = (28, 28, 1)
NUM_CLASSES = 10


def parse_args(description, argv=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--examples", type=int, default=8192, help="examples per repetition")
    parser.add_argument("--batch_size", type=int, default=256, help="global batch size")
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions of each")
    parser.add_argument("--replicas", default="1,8", help="comma-separated replica counts")
    return parser.parse_args(argv)


def synthetic_data(examples):
    rng = np.random.RandomState(0)
    images = rng.uniform(size=(examples,) + IMAGE_SHAPE).astype(np.float32)
    labels = rng.randint(0, NUM_CLASSES, size=examples).astype(np.int64)
    return images, labels


def model_fn(features, labels, mode, params):
    import tensorflow as tf  # noqa: PLC0415
    import tpu_estimator_compat as tec  # noqa: PLC0415
    layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
    v1 = tf.compat.v1
    images = features["image"]
    hidden = layers.max_pooling2d(layers.conv2d(images, 16, 5, padding="same",
                                                activation=tf.nn.relu), 2, 2)
    hidden = layers.max_pooling2d(layers.conv2d(hidden, 32, 5, padding="same",
                                                activation=tf.nn.relu), 2, 2)
    hidden = layers.dense(tf.reshape(hidden, [-1, 7 * 7 * 32]), 128, activation=tf.nn.relu)
    logits = layers.dense(hidden, NUM_CLASSES)
    if mode == tec.ModeKeys.PREDICT:
        return tec.TPUEstimatorSpec(mode, predictions={
            "classes": tf.argmax(logits, 1), "logits": logits})
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tec.ModeKeys.EVAL:
        def metric_fn(labels, logits):
            return {"accuracy": v1.metrics.accuracy(labels, tf.argmax(logits, 1))}
        return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
    optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.01))
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
        loss, global_step=v1.train.get_global_step()))


def trained_estimator(tec, strategy, data, batch_size):
    """A TPUEstimator (TPU semantics on `strategy`) with a checkpoint after one step."""
    import tensorflow as tf  # noqa: PLC0415
    images, labels = data
    config = tec.RunConfig(model_dir=tempfile.mkdtemp(), train_distribute=strategy,
                           save_summary_steps=0, tpu_config=tec.TPUConfig(
                               iterations_per_loop=1000,
                               per_host_input_for_training=tec.InputPipelineConfig.PER_HOST_V2))
    estimator = tec.TPUEstimator(model_fn, config=config, train_batch_size=batch_size,
                                 eval_batch_size=batch_size, predict_batch_size=batch_size)
    estimator.train(lambda params: tf.data.Dataset.from_tensor_slices(
        ({"image": images}, labels)).repeat().batch(params["batch_size"], drop_remainder=True),
        steps=1)
    return estimator


def dataset_fn(data, with_labels):
    """input_fn-style: `fn(batch_size)` -> the finite dataset of the benchmark data."""
    import tensorflow as tf  # noqa: PLC0415
    images, labels = data

    def make(batch_size):
        elements = ({"image": images}, labels) if with_labels else {"image": images}
        return tf.data.Dataset.from_tensor_slices(elements).batch(
            batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    return make


class HandWrittenForward:
    """The model's forward pass in plain TF2 on the estimator's trained variables."""

    def __init__(self, tf, estimator, strategy):
        self._tf = tf
        with strategy.scope():
            self.variables = {name: tf.Variable(estimator.get_variable_value(name))
                              for name in estimator.get_variable_names()
                              if name != "global_step"}
        self.strategy = strategy

    def logits(self, images):
        tf, v = self._tf, self.variables

        def conv_pool(x, name):
            x = tf.nn.relu(tf.nn.conv2d(x, v[name + "/kernel"], 1, "SAME") + v[name + "/bias"])
            return tf.nn.max_pool2d(x, 2, 2, "VALID")
        hidden = conv_pool(conv_pool(images, "conv2d"), "conv2d_1")
        hidden = tf.nn.relu(tf.matmul(tf.reshape(hidden, [-1, 7 * 7 * 32]),
                                      v["dense/kernel"]) + v["dense/bias"])
        return tf.matmul(hidden, v["dense_1/kernel"]) + v["dense_1/bias"]

    def new_iterators(self, make_dataset, batch_size):
        """A function giving, per call, a new iterator over `make_dataset(per-replica batch)`
        on every replica. Exhausted iterators are kept until the process ends: destroying an
        autotuned distributed iterator can stall (see eval_throughput.py)."""
        per_replica = batch_size // self.strategy.num_replicas_in_sync
        dataset = self.strategy.distribute_datasets_from_function(
            lambda context: make_dataset(per_replica))
        kept = []

        def new_iterator():
            kept.append(iter(dataset))
            return kept[-1]
        return new_iterator


def strategies(tf, replica_counts):
    """{replicas: strategy}, one per count for the whole process."""
    return {count: tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(count)])
            for count in replica_counts}


def run_bench(description, argv, with_labels, make_candidates, target):
    """Parses flags, then for each replica count trains the estimator and times
    `make_candidates(tf, estimator, forward, make_dataset, args)` -> {"ours", "baseline"}
    (zero-argument callables processing `examples_per_run` examples), interleaved."""
    from _common import (format_table, interleaved, peak_rss_mb,  # noqa: PLC0415
                         split_cpu, verdict)
    args = parse_args(description, argv)
    replica_counts = [int(r) for r in args.replicas.split(",")]
    split_cpu(max(replica_counts))
    import tensorflow as tf  # noqa: PLC0415
    import tpu_estimator_compat as tec  # noqa: PLC0415
    tf.get_logger().setLevel("ERROR")
    data = synthetic_data(args.examples)
    make_dataset = dataset_fn(data, with_labels)
    examples_per_run = args.examples - args.examples % args.batch_size
    rows = []
    for replicas, strategy in strategies(tf, replica_counts).items():
        estimator = trained_estimator(tec, strategy, data, args.batch_size)
        forward = HandWrittenForward(tf, estimator, strategy)
        candidates = make_candidates(tf, estimator, forward, make_dataset, args)
        for candidate in candidates.values():  # warm up: trace and first execution
            candidate()
        timings = interleaved(candidates, args.repeats)
        rates = {name: examples_per_run / timings.median(name) for name in candidates}
        ratio = rates["ours"] / rates["baseline"]
        rows.append([f"{replicas} replica(s)", f"{rates['ours']:.0f}",
                     f"{rates['baseline']:.0f}", f"{ratio:.3f}", verdict(ratio, target)])
    print(format_table(
        ["configuration", "ours ex/s", "baseline ex/s", "ratio", f"target >= {target}"], rows))
    print(f"peak RSS: {peak_rss_mb():.0f} MB")
