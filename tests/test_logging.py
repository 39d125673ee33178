"""Log lines as a TF1 program sees them: `tf.logging.set_verbosity` shows or silences the
estimator's INFO lines, with or without `tf.app.run`, and every line is printed once.

Each case runs a small legacy program in a fresh process (`tf.app.run` installs absl's
handler for the rest of a process, and pytest's own handlers would hide the duplicates).
"""
import os
import re
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


_LIFECYCLE_PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import tpu_estimator_compat.v1 as tf

    def model_fn(features, labels, mode, params):
        if isinstance(features, dict):
            features = features["x"]
        predictions = tf.layers.dense(features, 1)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.contrib.tpu.TPUEstimatorSpec(mode, predictions={"y": predictions})
        loss = tf.losses.mean_squared_error(labels, predictions)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, tf.train.get_global_step())
        def metric_fn(labels, predictions):
            return {"mse": tf.metrics.mean_squared_error(labels, predictions)}
        return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                               eval_metrics=(metric_fn, [labels, predictions]))

    def input_fn(params):
        x = np.ones([16, 2], np.float32)
        return tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(
            params["batch_size"], drop_remainder=True)

    def predict_input_fn(params):
        return tf.data.Dataset.from_tensor_slices(np.ones([8, 2], np.float32)).batch(
            params["batch_size"])

    def serving_input_receiver_fn():
        x = tf.placeholder(tf.float32, [None, 2])
        return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})

    def main(_):
        tf.logging.info("a line before any estimator")
        for use_tpu in (False, True):
            model_dir = f"{sys.argv[1]}/{use_tpu}"
            config = tf.contrib.tpu.RunConfig(
                model_dir=model_dir, save_checkpoints_steps=4, log_step_count_steps=1000,
                train_distribute=tf.distribute.OneDeviceStrategy("/cpu:0") if use_tpu else None,
                tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=2))
            estimator = tf.contrib.tpu.TPUEstimator(
                model_fn, config=config, use_tpu=use_tpu, train_batch_size=4,
                eval_batch_size=4, predict_batch_size=4)
            for phase, run in [
                    ("train", lambda: estimator.train(input_fn, max_steps=6)),
                    ("evaluate", lambda: estimator.evaluate(input_fn, steps=3)),
                    ("predict", lambda: list(estimator.predict(predict_input_fn))),
                    ("export", lambda: estimator.export_saved_model(
                        model_dir + "/export", serving_input_receiver_fn))]:
                print(f"=== use_tpu={use_tpu} {phase}", file=sys.stderr, flush=True)
                run()
        print("=== end", file=sys.stderr, flush=True)

    tf.logging.set_verbosity(tf.logging.INFO)
    tf.app.run(main)
""")

# The original's lines (TF 2.15 TPUEstimator, use_tpu=False, the program above under
# tf.app.run at INFO) that this package prints too, in order; <...> stands for a value.
_ORIGINAL_CPU_LINES = {
    "train": ["Calling model_fn.", "Done calling model_fn.",
              "Saving checkpoints for 0 into <model_dir>/model.ckpt.",
              "Saving checkpoints for 4 into <model_dir>/model.ckpt.",
              "Saving checkpoints for 6 into <model_dir>/model.ckpt.",
              "Loss for final step: <float32>."],
    "evaluate": ["Calling model_fn.", "Done calling model_fn.",
                 "Starting evaluation at <%Y-%m-%dT%H:%M:%S>",
                 "Evaluation [1/3]", "Evaluation [2/3]", "Evaluation [3/3]",
                 "Inference Time : <0.00000>s",
                 "Finished evaluation at <%Y-%m-%d-%H:%M:%S>",
                 "Saving dict for global step 6: global_step = 6, loss = <float32>, "
                 "mse = <float32>",
                 "Saving 'checkpoint_path' summary for global step 6: "
                 "<model_dir>/model.ckpt-6"],
    "predict": ["Calling model_fn.", "Done calling model_fn."],
    "export": ["Calling model_fn.", "Done calling model_fn."],  # CPU MetaGraph only
}
# With TPU semantics the original's infeed/outfeed hook logged before each Session.run (of
# iterations_per_loop steps; evaluation: all its steps), and evaluation counted its steps at
# the end of that run.
_INFEED_2 = ["Enqueue next (2) batch(es) of data to infeed.",
             "Dequeue next (2) batch(es) of data from outfeed."]
_TPU_LINES = {
    "train": (_ORIGINAL_CPU_LINES["train"][:3] + _INFEED_2 + _INFEED_2
              + _ORIGINAL_CPU_LINES["train"][3:4] + _INFEED_2
              + _ORIGINAL_CPU_LINES["train"][4:]),
    "evaluate": (_ORIGINAL_CPU_LINES["evaluate"][:3]
                 + ["Enqueue next (3) batch(es) of data to infeed.",
                    "Dequeue next (3) batch(es) of data from outfeed.", "Evaluation [3/3]"]
                 + _ORIGINAL_CPU_LINES["evaluate"][6:]),
    # 8 examples in batches of 4: a loop of 2 batches, then one that finds the end (the
    # original's last Session.run, which found its stopping signal)
    "predict": ["Calling model_fn.", "Done calling model_fn."] + _INFEED_2 + _INFEED_2,
    "export": ["Calling model_fn.", "Done calling model_fn."],
}
_PLACEHOLDERS = {
    "<model_dir>": r"\S+", "<float32>": r"-?\d\.\d+(e-?\d+)?|-?\d+\.\d*",
    "<%Y-%m-%dT%H:%M:%S>": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d",
    "<%Y-%m-%d-%H:%M:%S>": r"\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d", "<0.00000>": r"\d+\.\d{5}"}
_KEYS = ("Calling model_fn", "Done calling model_fn", "Saving checkpoints for",
         "Loss for final step", "Starting evaluation at", "Evaluation [", "Inference Time",
         "Finished evaluation at", "Saving dict for", "Saving 'checkpoint_path'",
         "Enqueue next", "Dequeue next")


def _pattern(line):
    pattern = re.escape(line)
    for placeholder, regex in _PLACEHOLDERS.items():
        pattern = pattern.replace(re.escape(placeholder), f"(?:{regex})")
    return pattern


def test_lifecycle_lines_are_the_originals_once_each_under_app_run(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(_LIFECYCLE_PROGRAM)
    env = {key: value for key, value in os.environ.items()
           if key != "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES"}
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "model")], capture_output=True,
        text=True, timeout=600, check=False, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    head, *phases = re.split(r"^=== ", result.stderr, flags=re.M)
    # A tf.logging line before any estimator exists: once, in absl's format.
    assert head.count("a line before any estimator") == 1, head
    assert re.search(r"^I\d{4} [\d:.]+ +\d+ program\.py:\d+\] a line before any estimator$",
                     head, re.M), head
    assert phases[-1] == "end\n"
    for phase in phases[:-1]:
        title, _, text = phase.partition("\n")
        use_tpu, name = re.fullmatch(r"use_tpu=(\w+) (\w+)", title).groups()
        expected = (_TPU_LINES if use_tpu == "True" else _ORIGINAL_CPU_LINES)[name]
        messages = [re.sub(r"^I\d{4} [\d:.]+ +\d+ \S+:\d+\] ", "", line)
                    for line in text.splitlines() if line.startswith("I")]
        assert not any(line.startswith("INFO:tensorflow:") for line in text.splitlines())
        lifecycle = [m for m in messages if m.startswith(_KEYS)]
        assert len(lifecycle) == len(expected), (title, lifecycle)
        for line, wanted in zip(lifecycle, expected):
            assert re.fullmatch(_pattern(wanted), line), (title, line, wanted)
        if name != "export":  # the first run of each device loop says it compiles
            assert f"Compiling the {dict(train='train', evaluate='eval').get(name, 'infer')} " \
                   "loop: its first run includes the compilation." in messages, messages


@pytest.mark.parametrize("steps, loops, each_step, expected", [
    (3, [3], True, ["Evaluation [1/3]", "Evaluation [2/3]", "Evaluation [3/3]"]),
    # from 20 steps on, TF1 logged every steps // 10 steps, and the last
    (25, [25], True, [f"Evaluation [{n}/25]" for n in (2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                                       22, 24, 25)]),
    (None, [1, 1], True, ["Evaluation [1]", "Evaluation [2]"]),
    # TPU semantics: counted when the run ends, as the original's one Session.run
    (40, [40], False, ["Evaluation [40/40]"]),
    (40, [8, 7], False, ["Evaluation [8/40]"]),  # input ended at 15: not a multiple of 4
])
def test_evaluation_progress_lines(steps, loops, each_step, expected):
    from tpu_estimator_compat.host import lifecycle_log  # noqa: PLC0415  (imports TF)
    progress = lifecycle_log.EvaluationProgress(steps)
    with _captured_tensorflow_log() as records:
        progress.start()
        for size in loops:
            progress.steps_done(size, each_step=each_step)
        progress.finish()
    lines = [record.getMessage() for record in records]
    assert re.fullmatch(r"Starting evaluation at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", lines[0])
    assert lines[1:-2] == expected
    assert re.fullmatch(r"Inference Time : \d+\.\d{5}s", lines[-2])
    assert re.fullmatch(r"Finished evaluation at \d{4}-\d\d-\d\d-\d\d:\d\d:\d\d", lines[-1])


class _captured_tensorflow_log:  # noqa: N801
    """The records the "tensorflow" logger gets at INFO inside the block."""

    def __enter__(self):
        import logging  # noqa: PLC0415
        self.records = []
        self.logger = logging.getLogger("tensorflow")
        self.level = self.logger.level
        self.handler = logging.Handler()
        self.handler.emit = self.records.append
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.INFO)
        return self.records

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)
