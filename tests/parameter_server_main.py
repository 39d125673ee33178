"""One task of the parameter-server tests (`test_parameter_servers.py`): the same program in
every task of the cluster, its role from TF_CONFIG, as the original's programs ran.

    TF_CONFIG=... python tests/parameter_server_main.py MODEL_DIR RESULT_JSON [MAX_STEPS]

It runs `train_and_evaluate` twice, unchanged from a single-machine program: an `Estimator`
in MODEL_DIR/estimator, then a `TPUEstimator(use_tpu=False)` with `iterations_per_loop` =
STEPS_PER_EXECUTION in MODEL_DIR/tpu_estimator, both to MAX_STEPS (given MAX_STEPS: the
`Estimator` alone, to that step). The model looks ids up
in an embedding table that `fixed_size_partitioner(2)` splits in two, and counts the steps
its train op ran in a variable of its own. What train_and_evaluate returned and the
global steps a SessionRunHook saw go to RESULT_JSON; the test process imports this module
for the same model and data.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tpu_estimator_compat.v1 as tf  # noqa: E402  pylint: disable=wrong-import-position

MAX_STEPS = 30
SAVE_CHECKPOINTS_STEPS = 10
STEPS_PER_EXECUTION = 5
VOCABULARY = 10
DIMENSION = 4
BATCH = 8


def input_fn(params=None):
    del params
    ids = np.arange(64, dtype=np.int64) % VOCABULARY
    targets = (ids.astype(np.float32) * 0.1).reshape(-1, 1)
    return tf.data.Dataset.from_tensor_slices(({"ids": ids}, targets)).repeat().batch(
        BATCH, drop_remainder=True)


def model_fn(features, labels, mode, params=None):
    del params
    with tf.variable_scope("model", partitioner=tf.fixed_size_partitioner(2)):
        table = tf.get_variable("embedding", [VOCABULARY, DIMENSION],
                                initializer=tf.constant_initializer(0.5))
    predictions = tf.layers.dense(tf.nn.embedding_lookup(table, features["ids"]), 1,
                                  name="out")
    loss = tf.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "mae": tf.metrics.mean_absolute_error(labels, predictions)})
    steps_run = tf.get_variable("steps_run", [], tf.int64, tf.zeros_initializer(),
                                trainable=False)
    minimize = tf.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss,
                                      train_op=tf.group(minimize, steps_run.assign_add(1)))


def estimators(model_dir):
    """(name, estimator) of the two runs."""
    config = dict(save_checkpoints_steps=SAVE_CHECKPOINTS_STEPS, log_step_count_steps=5)
    yield "estimator", tf.estimator.Estimator(
        model_fn, model_dir=os.path.join(model_dir, "estimator"),
        config=tf.estimator.RunConfig(**config))
    yield "tpu_estimator", tf.estimator.tpu.TPUEstimator(
        model_fn, use_tpu=False, train_batch_size=BATCH, eval_batch_size=BATCH,
        config=tf.estimator.tpu.RunConfig(
            model_dir=os.path.join(model_dir, "tpu_estimator"),
            tpu_config=tf.estimator.tpu.TPUConfig(iterations_per_loop=STEPS_PER_EXECUTION),
            **config))


class GlobalStepRecorder(tf.train.SessionRunHook):
    """Records the global step each after_run() sees."""

    def __init__(self):
        self.steps = []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(tf.train.get_global_step())

    def after_run(self, run_context, run_values):
        self.steps.append(int(run_values.results))


def main(model_dir, result_path, max_steps=None):
    tf.logging.set_verbosity(tf.logging.INFO)
    results = {}
    runs = list(estimators(model_dir))
    if max_steps is not None:
        max_steps, runs = int(max_steps), runs[:1]
    for name, estimator in runs:
        hook = GlobalStepRecorder()
        returned = tf.estimator.train_and_evaluate(
            estimator, tf.estimator.TrainSpec(input_fn, max_steps=max_steps or MAX_STEPS,
                                              hooks=[hook]),
            tf.estimator.EvalSpec(input_fn, steps=2, start_delay_secs=0, throttle_secs=0))
        results[name] = {"returned": repr(returned), "hook_steps": hook.steps}
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
