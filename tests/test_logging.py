"""Log lines as a TF1 program sees them: `tf.logging.set_verbosity` shows or silences the
estimator's INFO lines, with or without `tf.app.run`, and every line is printed once.

Each case runs a small legacy program in a fresh process (`tf.app.run` installs absl's
handler for the rest of a process, and pytest's own handlers would hide the duplicates).
"""
import os
import subprocess
import sys
import textwrap

import pytest

_PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import tpu_estimator_compat.v1 as tf

    def model_fn(features, labels, mode, params):
        predictions = tf.layers.dense(features, 1)
        loss = tf.losses.mean_squared_error(labels, predictions)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, tf.train.get_global_step())
        return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn(params):
        x = np.ones([16, 2], np.float32)
        return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(
            params["batch_size"], drop_remainder=True)

    def main(_):
        config = tf.contrib.tpu.RunConfig(
            model_dir=sys.argv[2], tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=2))
        estimator = tf.contrib.tpu.TPUEstimator(model_fn, config=config, use_tpu=False,
                                                train_batch_size=4)
        tf.logging.set_verbosity(tf.logging.WARN)
        tf.logging.info("user info while WARN")
        estimator.train(input_fn, max_steps=2)
        print("=== INFO ===", file=sys.stderr, flush=True)
        tf.logging.set_verbosity(tf.logging.INFO)
        tf.logging.info("user info while INFO")
        estimator.train(input_fn, max_steps=4)

    if sys.argv[1] == "app":
        tf.app.run(main)
    else:
        main(None)
""")


@pytest.mark.slow  # starts processes
@pytest.mark.parametrize("runner", ["app", "plain"])
def test_verbosity_controls_the_progress_lines_and_each_line_prints_once(tmp_path, runner):
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}
    result = subprocess.run(
        [sys.executable, str(script), runner, str(tmp_path / "model")], capture_output=True,
        text=True, timeout=300, check=False, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    silenced, shown = result.stderr.split("=== INFO ===\n")

    for line in ("Loss for final step", "Saving checkpoints for", "user info while"):
        assert line not in silenced
    assert shown.count("user info while INFO") == 1
    assert shown.count("Saving checkpoints for 4 into") == 1
    assert shown.count("Loss for final step: ") == 1
    loss_line = next(line for line in shown.splitlines() if "Loss for final step" in line)
    if runner == "app":  # absl's format, with the caller's file
        assert loss_line.startswith("I") and "training.py:" in loss_line, loss_line
    else:
        assert loss_line.startswith("INFO:tensorflow:Loss for final step: "), loss_line
