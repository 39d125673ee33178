"""TF1 idioms of public TPUEstimator programs outside the corpus that once failed here.

Each test is a minimal program written for the idiom (no program's code), and expects what
the original TPUEstimator (TF 2.15 + tensorflow-estimator 2.15, graph mode) did with the
same snippet; the constants below were printed by it.
"""
import logging

import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1  # the TF1 namespace (`import tensorflow as tf`)

FEATURES = np.arange(32, dtype=np.float32).reshape(16, 2) / 10.0
TARGETS = FEATURES @ np.array([[1.0], [-1.0]], np.float32)


def regression_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


# -- a LoggingTensorHook fetching the global step -------------------------------------------

# The original (use_tpu=False, LoggingTensorHook({'step': global_step, 'loss': loss},
# every_n_iter=2), max_steps=5): "loss = 0.009999999, step = 0", "... step = 2", "... step = 4".
ORIGINAL_LOGGED_STEPS = [0, 2, 4]
ORIGINAL_LOGGED_LOSSES = [0.009999999, 0.007172894, 0.007497579]


def logging_hook_model_fn(features, labels, mode, params):
    predictions = v1.layers.dense(features, 1, kernel_initializer=v1.zeros_initializer())
    loss = v1.losses.mean_squared_error(labels, predictions)
    global_step = v1.train.get_global_step()
    train_op = v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step)
    hook = v1.train.LoggingTensorHook({"step": global_step, "loss": loss}, every_n_iter=2)
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[hook])


def test_a_hook_fetching_the_global_step_reads_it_before_the_steps_increment(tmp_path,
                                                                            caplog):
    """TF1 ran the hook's fetch in the Session.run of the step that incremented the global
    step, and read it before the increment (issue 19, item 5: we logged 1, 3)."""
    caplog.set_level(logging.INFO, logger="tensorflow")
    estimator = tec.TPUEstimator(
        logging_hook_model_fn, use_tpu=False, train_batch_size=4,
        config=tec.RunConfig(model_dir=str(tmp_path), log_step_count_steps=None,
                             save_summary_steps=None))
    estimator.train(regression_input_fn, max_steps=5)
    logged = [record.getMessage() for record in caplog.records
              if record.filename == "basic_session_run_hooks.py"
              and record.getMessage().startswith("loss = ")]
    steps = [int(line.split("step = ")[1].split()[0]) for line in logged]
    losses = [float(line.split("loss = ")[1].split(",")[0]) for line in logged]
    assert steps == ORIGINAL_LOGGED_STEPS
    np.testing.assert_allclose(losses, ORIGINAL_LOGGED_LOSSES, rtol=1e-5)
