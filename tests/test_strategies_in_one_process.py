"""A user's MirroredStrategy and the simulated TPU's in one process: their all-reduces must
not share collective keys (TensorFlow keeps each key it has run for the life of the process
and aborts every collective after a mismatch)."""
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # a fresh process: the first collective keys of the process

_PROGRAM = textwrap.dedent("""
    import os, sys
    os.environ["TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"] = "8"
    import numpy as np
    import tensorflow as tf
    import tpu_estimator_compat as tec
    import tpu_estimator_compat.v1 as v1

    def model_fn(features, labels, mode, params):
        predictions = v1.layers.dense(features, 1, name="out")
        loss = v1.losses.mean_squared_error(labels, predictions)
        optimizer = tec.CrossShardOptimizer(v1.train.GradientDescentOptimizer(0.1))
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
            loss, v1.train.get_global_step()))

    def input_fn(params, width):
        x, y = np.ones((64, width), np.float32), np.ones((64, 1), np.float32)
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(
            params["batch_size"], drop_remainder=True)

    def estimator(name, use_tpu, **config):
        return tec.TPUEstimator(model_fn, use_tpu=use_tpu, train_batch_size=16, config=tec.RunConfig(
            model_dir=os.path.join(sys.argv[1], name), **config,
            tpu_config=tec.TPUConfig(iterations_per_loop=1)))

    users = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(8)])
    estimator("user", False, train_distribute=users).train(
        lambda params: input_fn(params, 3), max_steps=2)
    simulated = estimator("simulated", True)
    simulated.train(lambda params: input_fn(params, 4), max_steps=2)
    print("kernel", simulated.get_variable_value("out/kernel").shape)
""")


def test_a_users_mirrored_strategy_and_the_simulated_tpu_train_in_one_process(tmp_path):
    done = subprocess.run([sys.executable, "-c", _PROGRAM, str(tmp_path)], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "kernel (4, 1)" in done.stdout
