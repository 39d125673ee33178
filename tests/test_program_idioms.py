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


# -- a hook whose begin() builds a Saver of the moving averages ------------------------------

# The original (use_tpu=False; GradientDescent 0.05 then ExponentialMovingAverage(0.5).apply,
# 3 steps of 4 examples; evaluate(steps=2)): the loss with the trained weights, with the
# moving averages a hook's Saver restored, and dense/kernel/ExponentialMovingAverage.
ORIGINAL_EVAL_LOSS = 0.00282165
ORIGINAL_EMA_EVAL_LOSS = 0.004214044
ORIGINAL_EMA_KERNEL = [-0.012281, -0.013928]


class RestoreMovingAveragesHook(v1.train.SessionRunHook):
    """Evaluates the moving averages: a Saver of `ema.variables_to_restore()` built in
    begin() restores them over the trained weights in after_create_session()."""

    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.seen = []

    def begin(self):
        ema = v1.train.ExponentialMovingAverage(0.5)
        self.saver = v1.train.Saver(ema.variables_to_restore())  # hashes variables
        self.kernel = [v for v in v1.trainable_variables() if v.op.name == "dense/kernel"][0]

    def after_create_session(self, session, coord):
        self.saver.restore(session, v1.train.latest_checkpoint(self.model_dir))
        self.seen.append(("after_create_session", session.run(self.kernel)))

    def before_run(self, run_context):
        names = {variable: variable.op.name for variable in v1.global_variables()}
        self.seen.append(("before_run", names[self.kernel]))
        return v1.train.SessionRunArgs({"kernel": self.kernel})

    def after_run(self, run_context, run_values):
        self.seen.append(("after_run", run_values.results["kernel"]))

    def end(self, session):
        names = {variable: variable.op.name for variable in v1.trainable_variables()}
        self.seen.append(("end", names[self.kernel], session.run(self.kernel)))


def moving_average_model_fn(features, labels, mode, params):
    predictions = v1.layers.dense(features, 1, kernel_initializer=v1.zeros_initializer(),
                                  name="dense")
    loss = v1.losses.mean_squared_error(labels, predictions)
    if mode != tec.ModeKeys.TRAIN:
        return tec.TPUEstimatorSpec(mode, loss=loss)
    train_op = v1.train.GradientDescentOptimizer(0.05).minimize(
        loss, v1.train.get_global_step())
    with v1.control_dependencies([train_op]):
        train_op = v1.train.ExponentialMovingAverage(0.5).apply(v1.trainable_variables())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def test_a_hooks_saver_of_the_moving_averages_restores_them_for_evaluation(tmp_path):
    """A hook's begin(), after_create_session(), before_run() and end() are TF1 code, as
    model_fn is: `ema.variables_to_restore()` hashes variables (issue 19, item 2: "Variable
    is unhashable"). Its Saver restores after the checkpoint, so evaluation sees the moving
    averages; the next evaluation without the hook the trained weights again."""
    model_dir = str(tmp_path)
    estimator = tec.TPUEstimator(
        moving_average_model_fn, use_tpu=False, train_batch_size=4, eval_batch_size=4,
        config=tec.RunConfig(model_dir=model_dir, save_summary_steps=None))
    estimator.train(regression_input_fn, max_steps=3)
    losses, hooks = [], []
    for with_hook in (True, False, True):  # the second hook: the model's trace is reused
        hooks.append(RestoreMovingAveragesHook(model_dir))
        results = estimator.evaluate(regression_input_fn, steps=2,
                                     hooks=hooks[-1:] if with_hook else [])
        losses.append(results["loss"])
    np.testing.assert_allclose(
        losses, [ORIGINAL_EMA_EVAL_LOSS, ORIGINAL_EVAL_LOSS, ORIGINAL_EMA_EVAL_LOSS], rtol=1e-5)
    for hook in (hooks[0], hooks[2]):
        assert [event[0] for event in hook.seen] == [
            "after_create_session", "before_run", "after_run", "before_run", "after_run", "end"]
        assert hook.seen[1][1] == hook.seen[5][1] == "dense/kernel"
        for values in (hook.seen[0][1], hook.seen[2][1], hook.seen[5][2]):
            np.testing.assert_allclose(values.ravel(), ORIGINAL_EMA_KERNEL, atol=1e-6)


# -- an input_fn computing on a one-shot iterator's element ----------------------------------

WIDE_FEATURES = np.arange(64, dtype=np.float32).reshape(16, 4) / 10.0
WIDE_TARGETS = WIDE_FEATURES @ np.array([1.0, -1.0, 0.5, -0.5], np.float32)
# The original (use_tpu=False, train_batch_size=4, max_steps=6, then evaluate(steps=4)).
ORIGINAL_ITERATOR_EVAL_LOSS = 0.005129893
ORIGINAL_ITERATOR_KERNEL = [-0.007618945, -0.008559221, -0.009499501, -0.010439778]
ORIGINAL_FIRST_ROWS = [0, 4, 8, 12, 0, 4]  # the first example of each step's batch


def noisy_iterator_input_fn(params):
    """Reshapes the iterator's batch to static shapes, adds noise, builds the features."""
    batch_size = params["batch_size"]
    dataset = v1.data.Dataset.from_tensor_slices(
        (WIDE_FEATURES.reshape(16, 2, 2), WIDE_TARGETS)).repeat().batch(batch_size)
    images, targets = dataset.make_one_shot_iterator().get_next()
    noise = v1.random_normal([batch_size, 4])
    images = tf.reshape(images, [batch_size, 4])
    return ({"x": images + 1e-9 * noise, "noise": noise},
            tf.reshape(targets, [batch_size, 1]))


class FetchHook(v1.train.SessionRunHook):
    def __init__(self, fetches):
        self.fetches, self.results = fetches, []

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self.fetches)

    def after_run(self, run_context, run_values):
        self.results.append(run_values.results)


def test_an_input_fn_computing_on_a_one_shot_iterators_element_runs_it_every_step(tmp_path):
    """TF1 ran input_fn's ops on the iterator's element at every step: each step a new
    batch and new noise (issue 19, item 3: a ValueError)."""
    hooks = []

    def model_fn(features, labels, mode, params):
        assert features["x"].shape.as_list()[1:] == [4]  # input_fn's reshape
        predictions = v1.layers.dense(features["x"], 1, name="dense",
                                      kernel_initializer=v1.zeros_initializer())
        loss = v1.losses.mean_squared_error(labels, predictions)
        train_op = v1.train.GradientDescentOptimizer(0.01).minimize(
            loss, v1.train.get_global_step())
        hooks.append(FetchHook({"noise": features["noise"], "x": features["x"]}))
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                    training_hooks=hooks[-1:])

    estimator = tec.TPUEstimator(model_fn, use_tpu=False, train_batch_size=4,
                                 eval_batch_size=4,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    estimator.train(noisy_iterator_input_fn, max_steps=6)
    results = estimator.evaluate(noisy_iterator_input_fn, steps=4)
    assert results["loss"] == pytest.approx(ORIGINAL_ITERATOR_EVAL_LOSS, rel=1e-5)
    np.testing.assert_allclose(estimator.get_variable_value("dense/kernel").ravel(),
                               ORIGINAL_ITERATOR_KERNEL, rtol=1e-5)
    steps = hooks[0].results
    np.testing.assert_allclose([step["x"][0] for step in steps],
                               WIDE_FEATURES[ORIGINAL_FIRST_ROWS], atol=1e-6)
    noises = np.stack([step["noise"] for step in steps])
    assert noises.shape == (6, 4, 4)
    assert len({noise.tobytes() for noise in noises}) == 6  # new noise at every step
    assert 0.5 < noises.std() < 1.5


# The original: each step a new batch of both iterators (x: labeled * 10, u: unlabeled).
ORIGINAL_TWO_ITERATOR_STEPS = [([0.0, 10.0], [100.0, 101.0, 102.0, 103.0], [0, 1]),
                               ([20.0, 30.0], [104.0, 105.0, 106.0, 107.0], [0, 1]),
                               ([40.0, 50.0], [108.0, 109.0, 110.0, 111.0], [0, 1])]


def test_labeled_and_unlabeled_one_shot_iterators_advance_together(tmp_path):
    """Semi-supervised input: a computation on a labeled iterator's element, and another
    iterator's element returned as it is; TF1 advanced both at every step."""
    def input_fn(params):
        labeled = v1.data.Dataset.from_tensor_slices(
            (np.arange(16.0, dtype=np.float32), np.arange(16) % 2)).repeat().batch(2)
        unlabeled = v1.data.Dataset.from_tensor_slices(
            np.arange(100.0, 140.0, dtype=np.float32)).repeat().batch(4)
        x, y = labeled.make_one_shot_iterator().get_next()
        u = v1.data.make_one_shot_iterator(unlabeled).get_next()
        return {"x": tf.reshape(x, [2, 1]) * 10.0, "u": u}, y

    hooks = []

    def model_fn(features, labels, mode, params):
        w = v1.get_variable("w", [1, 1])
        loss = tf.reduce_mean(tf.matmul(features["x"], w)) + 0 * tf.reduce_mean(features["u"])
        hooks.append(FetchHook({"x": features["x"], "u": features["u"], "y": labels}))
        train_op = v1.train.GradientDescentOptimizer(0.0).minimize(
            loss, v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                    training_hooks=hooks[-1:])

    estimator = tec.TPUEstimator(model_fn, use_tpu=False, train_batch_size=2,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    estimator.train(input_fn, max_steps=3)
    assert [(r["x"].ravel().tolist(), r["u"].tolist(), r["y"].tolist())
            for r in hooks[0].results] == ORIGINAL_TWO_ITERATOR_STEPS


def test_an_input_fn_op_a_dataset_function_cannot_run_is_named(tmp_path):
    def input_fn(params):
        dataset = v1.data.Dataset.from_tensor_slices(
            (np.array([1, 2, 3, 4], np.int64), np.zeros([4], np.float32))).repeat().batch(2)
        keys, labels = dataset.make_one_shot_iterator().get_next()
        table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant([1, 2, 3, 4], tf.int64),
                                                tf.constant([0.1, 0.2, 0.3, 0.4])), 0.0,
            name="id_table")
        return {"x": tf.reshape(table.lookup(keys), [2, 1])}, labels

    estimator = tec.TPUEstimator(logging_hook_model_fn, use_tpu=False, train_batch_size=2,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    with pytest.raises(ValueError, match=r"with op 'id_table' \(HashTableV2\): a variable, "
                                         r"lookup table or other resource"):
        estimator.train(input_fn, max_steps=1)


# -- what evaluation counts with TPU semantics ------------------------------------------------

RNG = np.random.RandomState(0)
CLASSES = 5
IMAGES = RNG.rand(40, 6).astype(np.float32)
CLASSIFIER = RNG.randn(6, CLASSES).astype(np.float32)
LABELS = np.argmax(IMAGES @ CLASSIFIER, 1).astype(np.int32)
LABELS[::3] = (LABELS[::3] + 1) % CLASSES
LABELS[1::7] = (LABELS[1::7] + 2) % CLASSES
# The original (use_tpu=False, eval_batch_size=16, evaluate(steps=2): 32 examples).
ORIGINAL_METRICS = {
    "accuracy": 0.53125, "column_accuracy": 0.53125, "kept_accuracy": 0.4375,
    "mean_per_class_accuracy": 0.4252748, "per_replica_mean": 0.53125,
    "rotated_accuracy": 0.53125, "top_1": 0.53125, "weighted_accuracy": 0.5862069}


def classification_input_fn(params):
    return tf.data.Dataset.from_tensor_slices(({"image": IMAGES}, LABELS)).batch(
        params["batch_size"], drop_remainder=True)


def classification_metric_fn(labels, labels_column, logits, weights, kept_labels,
                             kept_predictions, per_replica):
    predictions = tf.argmax(logits, 1, output_type=tf.int32)

    def three_rows_each(tensor):  # k rows per example, as rotation models pass them
        return tf.reshape(tf.tile(tensor[:, None], [1, 3]), [-1])
    return {
        "accuracy": v1.metrics.accuracy(labels, predictions),
        "weighted_accuracy": v1.metrics.accuracy(labels, predictions, weights=weights),
        "mean_per_class_accuracy": v1.metrics.mean_per_class_accuracy(
            labels, predictions, CLASSES),
        "column_accuracy": v1.metrics.accuracy(labels_column, predictions),
        "top_1": v1.metrics.mean(tf.cast(
            tf.nn.in_top_k(predictions=logits, targets=labels, k=1), tf.float32)),
        "rotated_accuracy": v1.metrics.accuracy(three_rows_each(labels),
                                                three_rows_each(predictions)),
        "kept_accuracy": v1.metrics.accuracy(kept_labels, kept_predictions),
        "per_replica_mean": v1.metrics.mean(per_replica),
    }


def classification_model_fn(features, labels, mode, params):
    kernel = v1.get_variable("kernel", initializer=tf.constant(CLASSIFIER))
    logits = tf.matmul(features["image"], kernel)
    predictions = tf.argmax(logits, 1, output_type=tf.int32)
    keep = tf.not_equal(labels % 3, 0)  # a data-dependent number of rows per replica
    correct = tf.cast(tf.equal(labels, predictions), tf.float32)
    tensors = {"labels": labels, "labels_column": tf.reshape(labels, [-1, 1]),
               "logits": logits, "weights": tf.cast(labels > 0, tf.float32),
               "kept_labels": tf.boolean_mask(labels, keep),
               "kept_predictions": tf.boolean_mask(predictions, keep),
               "per_replica": tf.reshape(tf.reduce_mean(correct), [1])}
    return tec.TPUEstimatorSpec(mode, loss=tf.reduce_mean(logits),
                                eval_metrics=(classification_metric_fn, tensors))


@pytest.mark.parametrize("input_mode", ["PER_HOST_V1", "PER_HOST_V2", "BROADCAST"])
def test_tpu_evaluation_counts_every_example_once_as_the_original(tmp_path, eight_devices,
                                                                   input_mode):
    """With data evenly divided, TPU semantics (8 replicas of 2 examples) give the CPU
    numbers for every kind of metric tensor: weights, per-class means, [batch, 1] labels,
    k rows per example, rows kept by a mask, one value per replica (issue 19, item 6: that
    one was dropped with BROADCAST input, where only replica 0's copy counts)."""
    mode = getattr(tec.InputPipelineConfig, input_mode)
    estimator = tec.TPUEstimator(
        classification_model_fn, train_batch_size=16, eval_batch_size=16,
        config=tec.RunConfig(model_dir=str(tmp_path), train_distribute=eight_devices,
                             tpu_config=tec.TPUConfig(per_host_input_for_training=mode)))
    results = estimator.evaluate(classification_input_fn, steps=2)
    assert {name: results[name] for name in ORIGINAL_METRICS} == pytest.approx(
        ORIGINAL_METRICS, rel=1e-6)
