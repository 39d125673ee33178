"""tf.contrib.estimator / tf.estimator.experimental: early stopping, add_metrics,
clip_gradients_by_norm, forward_features; expected numbers are TF 2.15 + estimator 2.15's
(`tf.compat.v1.estimator`, graph mode) on the same model and data."""
import numpy as np
import pytest

import tpu_estimator_compat.v1 as tf

X = np.linspace(-1, 1, 32).astype(np.float32).reshape(-1, 1)
Y = (2 * X + 1).astype(np.float32)


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(8).repeat()


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(8)


def model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    loss = tf.losses.mean_squared_error(labels, pred) if labels is not None else None
    opt = tf.train.GradientDescentOptimizer(params.get("lr", 0.05))
    if params.get("clip"):
        opt = tf.contrib.estimator.clip_gradients_by_norm(opt, params["clip"])
    train_op = (opt.minimize(loss, global_step=tf.train.get_global_step())
                if mode == tf.estimator.ModeKeys.TRAIN else None)
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, predictions={"y": pred},
        eval_metric_ops=({"mae": tf.metrics.mean_absolute_error(labels, pred)}
                         if labels is not None else None))


def _train_and_evaluate(model_dir, make_hook):
    est = tf.estimator.Estimator(model_fn, str(model_dir),
                                 config=tf.estimator.RunConfig(save_checkpoints_steps=5))
    tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(input_fn, max_steps=200, hooks=[make_hook(est)]),
        tf.estimator.EvalSpec(input_fn, steps=2, throttle_secs=0, start_delay_secs=0))
    return est


def test_stop_if_lower_hook_stops_where_the_original_does(tmp_path):
    est = _train_and_evaluate(tmp_path, lambda est: tf.estimator.experimental.stop_if_lower_hook(
        est, "loss", 0.05, run_every_secs=None, run_every_steps=1))
    assert est.get_variable_value("global_step") == 45  # the original's step
    evals = tf.contrib.estimator.read_eval_metrics(est.eval_dir())
    assert list(evals) == [5, 10, 15, 20, 25, 30, 35, 40, 45]
    np.testing.assert_allclose(  # the original's eval losses
        [evals[step]["loss"] for step in evals],
        [0.27911, 0.27158, 0.2811, 0.27386, 0.15442, 0.11437, 0.09622, 0.08182, 0.04214],
        atol=1e-5)


def test_stop_if_no_decrease_hook_stops_where_the_original_does(tmp_path):
    est = _train_and_evaluate(tmp_path, lambda est: tf.contrib.estimator.stop_if_no_decrease_hook(
        est, "mae", 0, min_steps=12, run_every_secs=None, run_every_steps=3))
    assert est.get_variable_value("global_step") == 16  # the original's step


def _tpu_input_fn(params):
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(
        params["batch_size"], drop_remainder=True).repeat()


def _tpu_model_fn(features, labels, mode, params):
    del params
    spec = model_fn(features, labels, mode, {})
    return tf.contrib.tpu.TPUEstimatorSpec(mode, loss=spec.loss, train_op=spec.train_op)


@pytest.mark.slow  # compiles the step with XLA
def test_early_stopping_with_tpu_semantics_stops_at_a_loop_end(tmp_path, monkeypatch):
    from tpu_estimator_compat.engine import cluster_resolver  # noqa: PLC0415
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "1")
    est = tf.contrib.tpu.TPUEstimator(
        model_fn=_tpu_model_fn, use_tpu=True, train_batch_size=8, eval_batch_size=8,
        config=tf.contrib.tpu.RunConfig(
            model_dir=str(tmp_path), save_checkpoints_steps=5,
            tpu_config=tf.contrib.tpu.TPUConfig(iterations_per_loop=4)))
    hook = tf.estimator.experimental.stop_if_lower_hook(
        est, "loss", 0.05, run_every_secs=None, run_every_steps=1)
    tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(_tpu_input_fn, max_steps=200, hooks=[hook]),
        tf.estimator.EvalSpec(_tpu_input_fn, steps=2, throttle_secs=0,
                              start_delay_secs=0))
    # Checkpoints (and evaluations) at loop ends; the hook runs once per loop, after the
    # save: training stops at the end of the loop whose evaluation crossed the threshold.
    evals = tf.contrib.estimator.read_eval_metrics(est.eval_dir())
    assert list(evals) == [8, 16, 24, 32, 40, 48]
    assert [evals[step]["loss"] < 0.05 for step in evals] == [False] * 5 + [True]
    assert est.get_variable_value("global_step") == 48


def test_early_stopping_validates_as_the_original():
    est = tf.estimator.Estimator(model_fn)
    with pytest.raises(ValueError, match="Only one of `run_every_secs` and `run_every_steps`"):
        tf.estimator.experimental.stop_if_higher_hook(est, "auc", 0.9, run_every_steps=10)
    with pytest.raises(TypeError, match="`estimator` must have type `tf.estimator.Estimator`"):
        tf.estimator.experimental.make_early_stopping_hook(object(), lambda: True)
    with pytest.raises(TypeError, match="`should_stop_fn` must be callable."):
        tf.estimator.experimental.make_early_stopping_hook(est, True)
    assert tf.contrib.estimator.read_eval_metrics("/nonexistent/eval") == {}


def test_add_metrics_gives_the_originals_numbers(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"lr": 0.1})
    est.train(input_fn, max_steps=10)

    def metric_fn(labels, predictions, features):
        del labels
        return {"mean_pred": tf.metrics.mean(predictions["y"]),
                "mae": tf.metrics.mean(features["x"])}  # overrides the model_fn's

    results = tf.contrib.estimator.add_metrics(est, metric_fn).evaluate(eval_input_fn)
    assert sorted(results) == ["global_step", "loss", "mae", "mean_pred"]
    np.testing.assert_allclose([results["loss"], results["mae"], results["mean_pred"]],
                               [0.369928, 0.0, 0.803531], atol=1e-6)
    assert tf.estimator.add_metrics is tf.contrib.estimator.add_metrics
    with pytest.raises(ValueError, match=r"has following not expected args: \['params'\]"):
        tf.contrib.estimator.add_metrics(est, lambda labels, params: {})


def test_clip_gradients_by_norm_gives_the_originals_weights(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"lr": 0.1, "clip": 0.5})
    est.train(input_fn, max_steps=5)
    # The original: compute_gradients -> tf.clip_by_global_norm(grads, 0.5) -> apply.
    np.testing.assert_allclose(est.get_variable_value("w").ravel(), [0.10085391], rtol=1e-6)
    np.testing.assert_allclose(est.get_variable_value("b").ravel(), [0.06028957], rtol=1e-6)


def test_forward_features_adds_the_features_to_the_predictions(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"lr": 0.1})
    est.train(input_fn, max_steps=3)
    ids = np.arange(4, dtype=np.int64)

    def predict_input_fn():
        return tf.data.Dataset.from_tensor_slices({"x": X[:4], "id": ids}).batch(2)

    plain = list(est.predict(predict_input_fn))
    forwarded = list(tf.contrib.estimator.forward_features(est, "id").predict(predict_input_fn))
    assert [sorted(row) for row in forwarded] == [["id", "y"]] * 4
    assert [row["id"] for row in forwarded] == [0, 1, 2, 3]
    np.testing.assert_array_equal([row["y"] for row in forwarded], [row["y"] for row in plain])
    everything = list(tf.contrib.estimator.forward_features(est).predict(predict_input_fn))
    np.testing.assert_array_equal([row["x"] for row in everything], X[:4])
    with pytest.raises(TypeError, match="keys should be either a string or a list of strings"):
        tf.contrib.estimator.forward_features(est, 3)
    with pytest.raises(ValueError, match=r"Cannot forward feature key \(y\)"):
        list(tf.contrib.estimator.forward_features(est, "y").predict(
            lambda: tf.data.Dataset.from_tensor_slices({"x": X[:2], "y": X[:2]}).batch(2)))


def _eval_event_steps(eval_dir):
    import glob  # pylint: disable=import-outside-toplevel
    import tensorflow as tf2  # pylint: disable=import-outside-toplevel
    return [event.step for path in sorted(glob.glob(f"{eval_dir}/events*"))
            for event in tf2.compat.v1.train.summary_iterator(path)
            if any(value.tag == "mae" for value in event.summary.value)]


def test_in_memory_evaluator_hook_evaluates_the_training_weights_as_the_original(tmp_path):
    est = tf.estimator.Estimator(model_fn, str(tmp_path))
    hook = tf.estimator.experimental.InMemoryEvaluatorHook(
        est, eval_input_fn, steps=3, name="mem", every_n_iter=4)
    est.train(input_fn, max_steps=10, hooks=[hook])
    est.train(input_fn, steps=3, hooks=[hook])
    # The original: before training, every 4 steps and at the end of each train() call,
    # on the weights of that moment; eval_mem holds no checkpoint_path summary.
    assert _eval_event_steps(est.eval_dir("mem")) == [0, 4, 8, 10, 10, 13]
    evals = tf.contrib.estimator.read_eval_metrics(est.eval_dir("mem"))
    assert list(evals) == [0, 4, 8, 10, 13]
    np.testing.assert_allclose([[evals[step]["loss"], evals[step]["mae"]] for step in evals],
                               [[1.03191, 0.849462], [0.628506, 0.680914],
                                [0.449492, 0.58094], [0.415849, 0.55761],
                                [0.370203, 0.526171]], rtol=1e-5)
    assert sorted(evals[13]) == ["loss", "mae"]
    # Training itself is the original's (the evaluations do not touch its variables).
    np.testing.assert_allclose([est.get_variable_value("w").item(),
                                est.get_variable_value("b").item()],
                               [0.64388317, 0.5916139], rtol=1e-6)
    assert tf.contrib.estimator.InMemoryEvaluatorHook is hook.__class__
    with pytest.raises(ValueError, match=r"invalid every_n_iter=0\."):
        tf.estimator.experimental.InMemoryEvaluatorHook(est, eval_input_fn, every_n_iter=0)


def test_in_memory_evaluator_hook_evaluates_partitioned_variables(tmp_path):
    x = np.linspace(-1, 1, 64).astype(np.float32).reshape(-1, 4)
    y = (x.sum(1, keepdims=True) + 1).astype(np.float32)

    def partitioned_model_fn(features, labels, mode):
        w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer(),
                            partitioner=tf.fixed_size_partitioner(2))
        loss = tf.losses.mean_squared_error(labels, tf.matmul(features["x"], w))
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.train.AdagradOptimizer(
            0.3).minimize(loss, global_step=tf.train.get_global_step()))

    est = tf.estimator.Estimator(partitioned_model_fn, str(tmp_path))
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(4).repeat(),
              max_steps=7, hooks=[tf.estimator.experimental.InMemoryEvaluatorHook(
                  est, lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(4),
                  every_n_iter=3)])
    evals = tf.contrib.estimator.read_eval_metrics(est.eval_dir())
    assert list(evals) == [0, 3, 6, 7]  # the original's steps and losses
    np.testing.assert_allclose([evals[step]["loss"] for step in evals],
                               [6.482489, 3.090647, 1.775994, 1.61848], rtol=1e-5)


def test_replicate_model_fn_on_one_device_trains_as_the_original(tmp_path):
    def tower_model_fn(features, labels, mode, params):
        w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        pred = tf.matmul(features["x"], w) + b
        loss = tf.losses.mean_squared_error(labels, pred)
        opt = tf.contrib.estimator.TowerOptimizer(
            lambda: tf.train.MomentumOptimizer(params["lr"], 0.9))
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, train_op=opt.minimize(loss, global_step=tf.train.get_global_step()),
            eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)})

    est = tf.estimator.Estimator(tf.contrib.estimator.replicate_model_fn(tower_model_fn),
                                 str(tmp_path), params={"lr": 0.1})
    est.train(input_fn, max_steps=6)
    results = est.evaluate(eval_input_fn)
    # The original (TF 1.15's replicate_model_fn on a machine without GPUs: one tower).
    assert sorted(est.get_variable_names()) == ["b", "b/Momentum", "global_step", "w",
                                                "w/Momentum"]
    np.testing.assert_allclose([est.get_variable_value("w").item(),
                                est.get_variable_value("b").item(), results["loss"],
                                results["mae"]],
                               [1.8527244, 1.7139744, 0.5174559, 0.71397436], rtol=1e-6)
    with pytest.raises(NotImplementedError) as error:
        tf.contrib.estimator.replicate_model_fn(tower_model_fn, devices=["/gpu:0", "/gpu:1"])
    assert ("replicate_model_fn over 2 devices (towers) is not provided by "
            "tpu_estimator_compat" in str(error.value))
    assert ("RunConfig(train_distribute=tf.distribute.MirroredStrategy(['/gpu:0', '/gpu:1']))"
            in str(error.value))
    with pytest.raises(ValueError, match="Tower losses need to be reduced in some way, yet "
                                         "none reduction is specified."):
        tf.contrib.estimator.replicate_model_fn(tower_model_fn, loss_reduction="none")


@pytest.mark.parametrize("name, replacement", [
    ("SavedModelEstimator", "tf.saved_model.load on the exported SavedModel"),
    ("RNNClassifier", "tf.keras.layers.RNN (or tf.nn.dynamic_rnn) over the sequence features, "
                      "its last output through a tf.contrib.estimator head"),
    ("boosted_trees_classifier_train_in_memory", "TensorFlow Decision Forests"),
])
def test_unserved_names_name_the_replacement(name, replacement):
    with pytest.raises(AttributeError) as error:
        getattr(tf.contrib.estimator, name)
    assert f"Instead of {name}, use" in str(error.value)
    assert replacement in str(error.value)


def test_every_tf115_name_is_served_or_names_its_replacement():
    from tpu_estimator_compat.cli import inventory  # noqa: PLC0415
    from tpu_estimator_compat.v1.contrib import estimator  # noqa: PLC0415
    names = [name for kind in inventory.load()["tensorflow.contrib.estimator"].values()
             for name in kind]
    unserved = []
    for name in names:
        try:
            getattr(tf.contrib.estimator, name)
        except AttributeError as error:
            assert f"Instead of {name}, use {estimator.REPLACEMENTS[name]}." in str(error)
            unserved.append(name)
    assert sorted(unserved) == sorted(estimator.REPLACEMENTS)  # none stale
    assert len(names) - len(unserved) == 15  # of 26


def _batches(input_fn, count):
    """What TF1's session loop read from an input_fn's tensors: up to `count` batches."""
    import tensorflow as tf2  # pylint: disable=import-outside-toplevel
    out = []
    with tf2.Graph().as_default():
        element = input_fn()
        with tf2.compat.v1.Session() as session:
            try:
                for _ in range(count):
                    out.append(tf2.nest.map_structure(lambda a: a.tolist(), session.run(element)))
            except tf2.errors.OutOfRangeError:
                out.append("END")
    return out


NUMPY_X = {"b": np.arange(10, dtype=np.float64).reshape(10, 1),
           "a": np.arange(10, 20, dtype=np.int32)}
NUMPY_Y = np.arange(100, 110, dtype=np.float32)


def test_numpy_input_fn_gives_the_originals_batches():
    numpy_input_fn = tf.estimator.inputs.numpy_input_fn
    # The original's batches (TF 2.15's tf.compat.v1.estimator.inputs, unshuffled).
    assert _batches(numpy_input_fn(NUMPY_X, NUMPY_Y, batch_size=4, num_epochs=2,
                                   shuffle=False), 10) == [
        ({"a": [10, 11, 12, 13], "b": [[0.0], [1.0], [2.0], [3.0]]}, [100, 101, 102, 103]),
        ({"a": [14, 15, 16, 17], "b": [[4.0], [5.0], [6.0], [7.0]]}, [104, 105, 106, 107]),
        ({"a": [18, 19, 10, 11], "b": [[8.0], [9.0], [0.0], [1.0]]}, [108, 109, 100, 101]),
        ({"a": [12, 13, 14, 15], "b": [[2.0], [3.0], [4.0], [5.0]]}, [102, 103, 104, 105]),
        ({"a": [16, 17, 18, 19], "b": [[6.0], [7.0], [8.0], [9.0]]}, [106, 107, 108, 109]),
        "END"]
    assert _batches(numpy_input_fn(np.arange(5), batch_size=3, num_epochs=None,
                                   shuffle=False), 3) == [[0, 1, 2], [3, 4, 0], [1, 2, 3]]
    assert _batches(numpy_input_fn(NUMPY_X, {"t": NUMPY_Y, "u": NUMPY_Y * 2}, batch_size=6,
                                   shuffle=False), 3)[1:] == [
        ({"a": [16, 17, 18, 19], "b": [[6.0], [7.0], [8.0], [9.0]]},
         {"t": [106, 107, 108, 109], "u": [212, 214, 216, 218]}), "END"]
    import tensorflow as tf2  # pylint: disable=import-outside-toplevel
    with tf2.Graph().as_default():
        for epochs, rows in ((1, None), (None, 4)):
            features, labels = numpy_input_fn(NUMPY_X, NUMPY_Y, batch_size=4, num_epochs=epochs,
                                              shuffle=False)()
            assert [(k, v.dtype.name, v.shape.as_list()) for k, v in sorted(features.items())] \
                == [("a", "int32", [rows]), ("b", "float64", [rows, 1])]
            assert (labels.dtype.name, labels.shape.as_list()) == ("float32", [rows])


@pytest.mark.parametrize("kwargs, error", [
    (dict(x=NUMPY_X, y=NUMPY_Y[:3], shuffle=False),
     "Length of tensors in x and y is mismatched. All elements in x and y must have the same "
     "length.\nShapes in x: {'a': (10,), 'b': (10, 1)}\nShapes in y: (3,)\n"),
    (dict(x=NUMPY_X, y={"a": NUMPY_Y}, shuffle=False),
     "1 duplicate keys are found in both x and y: {'a'}"),
    (dict(x=[1, 2], shuffle=False), "x must be a dict or array; got list"),
    (dict(x=NUMPY_X, shuffle=None), "shuffle must be provided and explicitly set as boolean (it "
     "is recommended to set it as True for training); got None"),
])
def test_numpy_input_fn_refuses_bad_input_as_the_original(kwargs, error):
    with pytest.raises((ValueError, TypeError)) as raised:
        tf.estimator.inputs.numpy_input_fn(**kwargs)()
    assert str(raised.value) == error


def test_estimators_read_every_row_of_numpy_input_fn(tmp_path):
    def mean_model_fn(features, labels, mode):
        del features
        step = tf.train.get_global_step()
        return tf.estimator.EstimatorSpec(
            mode, loss=tf.reduce_mean(labels), train_op=tf.assign_add(step, 1),
            eval_metric_ops={"mean_label": tf.metrics.mean(labels)})

    est = tf.estimator.Estimator(mean_model_fn, str(tmp_path))
    est.train(tf.estimator.inputs.numpy_input_fn(NUMPY_X, NUMPY_Y, batch_size=4, num_epochs=2,
                                                 shuffle=True))
    assert est.get_variable_value("global_step") == 6  # the original's step
    results = est.evaluate(tf.estimator.inputs.numpy_input_fn(
        NUMPY_X, NUMPY_Y, batch_size=4, shuffle=False))
    # The original's numbers: all 10 rows, in batches of 4, 4 and 2.
    assert results["mean_label"] == pytest.approx(104.5)
    assert results["loss"] == pytest.approx(105.166664)


def test_pandas_input_fn_batches_the_columns_as_numpy_input_fn():
    # Neither environment has pandas: these are numpy_input_fn's (the original's) batches of
    # the same columns, the target popped as the original's pandas_input_fn did.
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"b": np.arange(5.0), "a": np.arange(10, 15)}, index=range(5))
    target = pd.Series(np.arange(100, 105), index=range(5))
    assert _batches(tf.estimator.inputs.pandas_input_fn(frame, target, batch_size=3,
                                                        shuffle=False), 3) == [
        ({"a": [10, 11, 12], "b": [0.0, 1.0, 2.0]}, [100, 101, 102]),
        ({"a": [13, 14], "b": [3.0, 4.0]}, [103, 104]), "END"]


def test_tf1_module_paths_serve_the_same_functions():
    # pylint: disable=import-outside-toplevel
    from tpu_estimator_compat.v1.contrib.estimator.python.estimator import early_stopping
    from tpu_estimator_compat.v1.contrib.estimator.python.estimator import extenders
    from tpu_estimator_compat.v1.python.estimator.inputs import numpy_io
    from tpu_estimator_compat.v1.python.estimator import early_stopping as core_early_stopping
    assert early_stopping.stop_if_no_increase_hook \
        is core_early_stopping.stop_if_no_increase_hook \
        is tf.estimator.experimental.stop_if_no_increase_hook
    assert extenders.forward_features is tf.contrib.estimator.forward_features
    assert numpy_io.numpy_input_fn is tf.estimator.inputs.numpy_input_fn
