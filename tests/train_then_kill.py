"""A script that trains the shared regression model (`helpers.model_fn`) until it is killed.

    python tests/train_then_kill.py MODEL_DIR

trains with TPU semantics on a MirroredStrategy over 2 logical CPUs (a simulated 2-core TPU),
with a checkpoint after every loop of `ITERATIONS_PER_LOOP` steps and a `max_steps` it never
reaches: it runs until the parent sends SIGKILL. The test that resumes it builds its estimator
with `make_estimator` below, so both train exactly the same model.
"""
import functools
import sys

import tensorflow as tf

import helpers
import tpu_estimator_compat as tec
from helpers import FEATURES, TARGETS, input_fn, model_fn  # noqa: F401  (the model it trains)

v1 = tf.compat.v1

VARIABLE_NAMES = {
    "adam": ["beta1_power", "beta2_power", "global_step",
             "linear/hidden/bias", "linear/hidden/bias/Adam", "linear/hidden/bias/Adam_1",
             "linear/hidden/kernel", "linear/hidden/kernel/Adam", "linear/hidden/kernel/Adam_1",
             "linear/w", "linear/w/Adam", "linear/w/Adam_1"],
    "sgd": ["global_step", "linear/hidden/bias", "linear/hidden/kernel", "linear/w"],
}
ITERATIONS_PER_LOOP = 2
BATCH_SIZE = 8

# PER_HOST_V2 input, a global batch of 16 unless given; eval/predict batch only when given.
make_estimator = functools.partial(
    helpers.make_estimator, iterations_per_loop=ITERATIONS_PER_LOOP, batch_size=16,
    eval_batch_size=None, predict_batch_size=None,
    input_mode=tec.InputPipelineConfig.PER_HOST_V2)


def w_sum_model_fn(features, labels, mode, params):
    """Predicts the sum of model_fn's `linear/w` for every example (restores only that)."""
    del labels, params
    with v1.variable_scope("linear"):
        weights = v1.get_variable("w", [3, 1])
    return tec.TPUEstimatorSpec(mode, predictions=tf.reduce_sum(weights) + 0 * features[:, 0])


def predict_input_fn(params):
    """The first 4 examples' features, one batch."""
    del params
    return tf.data.Dataset.from_tensor_slices(FEATURES[:4]).batch(4)


def main(model_dir):
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    estimator = make_estimator(model_dir, strategy, batch_size=BATCH_SIZE,
                               save_checkpoints_steps=1, keep_checkpoint_max=3)
    estimator.train(input_fn, max_steps=10**9)


if __name__ == "__main__":
    main(sys.argv[1])
