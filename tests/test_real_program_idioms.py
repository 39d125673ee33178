"""Idioms of the real programs of the corpus (tests/real_programs) that once failed here.

Each test is the few lines of a program's model_fn or driver that broke, with the original
TPUEstimator's behaviour (TF 2.15 + tensorflow-estimator 2.15, `use_tpu=False`) as expected
result. The repros these come from are named in each docstring.
"""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat as tec
from tpu_estimator_compat.v1 import layers as legacy_layers
import helpers

v1 = tf.compat.v1

X = np.random.RandomState(0).rand(64, 4).astype(np.float32)
Y = (X.sum(axis=1) > 2).astype(np.int64)


def features_only_input_fn(params):
    """Labels inside the features dict, none beside it (BERT / ALBERT pre-training)."""
    dataset = tf.data.Dataset.from_tensor_slices({"x": X, "y": Y})
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def classifier_model_fn(features, labels, mode, params):
    assert labels is None
    logits = legacy_layers.dense(features["x"], 2, name="dense")
    loss = v1.losses.sparse_softmax_cross_entropy(features["y"], logits)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=v1.train.get_global_step())
    return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def test_xla_module_of_tensorflow_compiler_is_served_as_tensorflows_own():
    """simclr objective.py: `from tensorflow.compiler.tf2xla.python import xla` (repro
    simclr_1.py), under the runner and with rewritten imports."""
    from tpu_estimator_compat.v1.compiler.tf2xla.python import xla  # noqa: PLC0415
    from tensorflow.compiler.tf2xla.python import xla as real_xla  # noqa: PLC0415

    assert xla is real_xla and callable(xla.replica_id)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_split_host_batches_after_disable_v2_behavior_shapes(tmp_path, monkeypatch,
                                                            eight_devices):
    """simclr run.py calls tf.disable_v2_behavior() and trains on the TPU with PER_HOST_V1
    input (the default): each host batch is split across the replicas, and with TF1 shapes
    its static size is a `Dimension` (corpus simclr, runner-tpu)."""
    from tensorflow.python.framework import tensor_shape  # noqa: PLC0415

    monkeypatch.setattr(tensor_shape, "_TENSORSHAPE_V2_OVERRIDE",
                        tensor_shape._TENSORSHAPE_V2_OVERRIDE)  # restored after the test
    v1.disable_v2_tensorshape()
    estimator = tec.TPUEstimator(
        classifier_model_fn, train_batch_size=16,
        config=tec.RunConfig(model_dir=str(tmp_path), train_distribute=eight_devices))
    estimator.train(features_only_input_fn, max_steps=2)
    assert estimator.get_variable_value("global_step") == 2


def test_host_call_after_disable_v2_behavior_shapes(tmp_path, monkeypatch):
    """resnet_main.py calls tf.disable_v2_behavior() and passes a host_call: with TF1 shapes
    a first dimension is a `Dimension` (repro resnet_main_3.py)."""
    from tensorflow.python.framework import tensor_shape  # noqa: PLC0415

    monkeypatch.setattr(tensor_shape, "_TENSORSHAPE_V2_OVERRIDE",
                        tensor_shape._TENSORSHAPE_V2_OVERRIDE)  # restored after the test
    v1.disable_v2_tensorshape()
    steps = []

    def model_fn(features, labels, mode, params):
        spec = classifier_model_fn(features, labels, mode, params)

        def host_call(step, loss):
            return tf.numpy_function(lambda s: steps.append(int(s[0])) or np.int64(0),
                                     [step], tf.int64)
        step = tf.reshape(v1.train.get_global_step(), [1])
        return spec._replace(host_call=(host_call, [step, tf.reshape(spec.loss, [1])]))

    estimator = tec.TPUEstimator(model_fn, use_tpu=False, train_batch_size=8,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    estimator.train(features_only_input_fn, max_steps=2)
    assert steps == [0, 1]


def _one_shot_input_fn(params):
    """disentanglement_lib's train.py: the input_fn returns a one-shot iterator's element of a
    dataset of 3 batches (TF1: a new batch each step; evaluation ends with the dataset)."""
    dataset = v1.data.Dataset.range(100).map(
        lambda x: tf.cast(tf.reshape(x, [1]), tf.float32))
    dataset = dataset.batch(params["batch_size"], drop_remainder=True).take(3)
    return v1.data.make_one_shot_iterator(dataset).get_next()


@pytest.mark.slow  # trains or evaluates for several seconds
def test_input_fn_returning_a_one_shot_iterators_element(tmp_path):
    """Expected: the original TPUEstimator (TF 2.15, use_tpu=False) read batches [0, 1],
    [2, 3], [4, 5] in train and in evaluate, whose loss was -1.875 at step 3."""
    seen = []

    def model_fn(features, labels, mode, params):
        w = v1.get_variable("w", [1], initializer=v1.zeros_initializer())
        record = tf.numpy_function(
            lambda f: seen.append(f.ravel().tolist()) or np.float32(0), [features], tf.float32)
        loss = tf.reduce_mean(features * w) + tf.reshape(record, [])
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = tec.TPUEstimator(model_fn, use_tpu=False, train_batch_size=2,
                                 eval_batch_size=2,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    estimator.train(_one_shot_input_fn, steps=3)
    assert seen == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    del seen[:]
    results = estimator.evaluate(_one_shot_input_fn)  # steps=None: until the dataset ends
    assert seen[:3] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]  # then the engine's stop batch
    assert results["loss"] == pytest.approx(-1.875)
    assert results["global_step"] == 3

    def rearranged(params):  # simclr's data.py: the element's tensors in another structure
        x, y, mask = v1.data.make_one_shot_iterator(v1.data.Dataset.from_tensor_slices(
            (X[:4], Y[:4], np.ones(4, np.bool_))).batch(2)).get_next()
        return {"x": x, "mask": mask}, y

    batches = _host_batches(rearranged)
    assert len(batches) == 2 and sorted(batches[1][0]) == ["mask", "x"]
    np.testing.assert_array_equal(batches[1][0]["x"], X[2:4])
    np.testing.assert_array_equal(batches[1][1], Y[2:4])

    def computed(params):  # computed from the element: TF1 computed it for every batch
        return _one_shot_input_fn(params) * 2.0

    del seen[:]
    estimator.train(computed, steps=2)
    assert seen == [[0.0, 2.0], [4.0, 6.0]]

    def constant(params):  # nothing read from the iterator: one batch, repeated
        _one_shot_input_fn(params)
        return tf.ones([2, 1])

    with pytest.raises(ValueError, match=r"input_fn made a one-shot iterator "
                                         r"\(`make_one_shot_iterator\(\)`\) but returned values"):
        estimator.train(constant, steps=1)


@pytest.mark.slow  # predicts for several seconds
def test_one_shot_iterator_features_returned_with_none_labels(tmp_path):
    """tpuDCGAN's noise_input_fn: `return {'random_noise': it.get_next()}, None`. Expected:
    the original TPUEstimator (TF 2.15, use_tpu=False) passed labels=None to model_fn and
    predicted every batch, also when input_fn computed on the element."""
    rows = np.arange(8, dtype=np.float32).reshape(4, 2)

    def model_fn(features, labels, mode, params):
        assert labels is None
        w = v1.get_variable("w", [], initializer=v1.ones_initializer())
        return tec.TPUEstimatorSpec(mode, predictions={"y": features["x"] * w})

    def element(params):
        return v1.data.make_one_shot_iterator(
            tf.data.Dataset.from_tensor_slices(rows).batch(params["batch_size"])).get_next()

    def returned(params):
        return {"x": element(params)}, None

    def computed(params):
        return {"x": tf.reshape(element(params), [params["batch_size"], 2]) * 10.0}, None

    estimator = tec.TPUEstimator(model_fn, use_tpu=False, predict_batch_size=2,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    predicted = [p["y"].tolist() for p in estimator.predict(returned)]
    assert predicted == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]
    predicted = [p["y"].tolist() for p in estimator.predict(computed)]
    assert predicted == [[0.0, 10.0], [20.0, 30.0], [40.0, 50.0], [60.0, 70.0]]


def _host_batches(input_fn):
    """The batches the engine reads from `input_fn` (train mode, one device)."""
    from tpu_estimator_compat.tf1_behaviour import iterators  # noqa: PLC0415

    with iterators.recording_iterators() as recorded:
        result = input_fn({"batch_size": 2})
    return list(recorded.dataset_of(result).as_numpy_iterator())


@pytest.mark.slow  # trains or evaluates for several seconds
def test_xla_replica_id_in_model_fn_on_eight_replicas(tmp_path, eight_devices):
    """simclr objective.py: `xla.replica_id()` (from tensorflow.compiler.tf2xla.python) picks
    each replica's rows of the cross-replica batch. On the simulated TPU TensorFlow's op was
    compiled alone by XLA and crashed the process (segmentation fault); it is each replica's
    index in the group, as on a TPU."""
    from tensorflow.compiler.tf2xla.python import xla  # noqa: PLC0415

    tensorflows_replica_id = xla.replica_id
    seen = []

    def model_fn(features, labels, mode, params):
        assert xla.replica_id().dtype == tf.int32  # the XLA op's type: simclr also uses
        tf.scatter_nd([[xla.replica_id()]], [1.0], [8])  # it uncast, as indices
        replica_id = tf.cast(tf.cast(xla.replica_id(), tf.uint32), tf.int32)  # simclr's casts
        record = tf.numpy_function(lambda r: seen.append(int(r)) or np.float32(0),
                                   [replica_id], tf.float32)
        spec = classifier_model_fn(features, labels, mode, params)
        return spec._replace(loss=spec.loss + tf.reshape(record, []))

    estimator = tec.TPUEstimator(
        model_fn, train_batch_size=16,
        config=tec.RunConfig(model_dir=str(tmp_path), train_distribute=eight_devices))
    estimator.train(features_only_input_fn, max_steps=2)
    assert sorted(seen) == sorted(list(range(8)) * 2)
    assert xla.replica_id is tensorflows_replica_id  # restored after the trace


@pytest.mark.slow  # trains and evaluates for several seconds
def test_evaluation_keeps_the_static_batch_size_of_drop_remainder_batches(tmp_path):
    """noisystudent's model_fn asserts `image.shape[0] == params['batch_size']`. Expected: the
    original TPUEstimator (TF 2.15, use_tpu=False) gave model_fn [8, 2] features in train and
    in evaluate, whose loss over the two full batches of 20 rows was 15.5."""
    rows = np.arange(40, dtype=np.float32).reshape(20, 2)
    shapes = []

    def model_fn(features, labels, mode, params):
        shapes.append((mode, features.shape.as_list()))
        w = v1.get_variable("w", [], initializer=v1.ones_initializer())
        loss = tf.reduce_mean(features * w)
        train_op = v1.train.GradientDescentOptimizer(0.0).minimize(
            loss, v1.train.get_global_step())
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn(params):
        return tf.data.Dataset.from_tensor_slices(rows).batch(params["batch_size"],
                                                              drop_remainder=True)

    estimator = tec.TPUEstimator(model_fn, use_tpu=False, train_batch_size=8,
                                 eval_batch_size=8, config=tec.RunConfig(model_dir=str(tmp_path)))
    estimator.train(input_fn, steps=1)
    results = estimator.evaluate(input_fn)
    assert {mode for mode, _ in shapes} == {"train", "eval"}
    assert all(shape == [8, 2] for _, shape in shapes), shapes
    assert results["loss"] == pytest.approx(15.5)


class _DoubledKernelConv2D(legacy_layers.Conv2D):
    """A TF1-style subclass (ryangillard pgan's equalized learning rate layers): `call`
    scales the kernel and convolves with `self._convolution_op`, which TF 1.x's `build` made."""

    def call(self, inputs):
        return tf.nn.bias_add(self._convolution_op(inputs, self.kernel * 2.0), self.bias)


def test_conv2d_subclass_convolves_with_convolution_op(tmp_path):
    """repro pgan_1.py. TensorFlow 2.15's layers no longer have `_convolution_op` (the
    original fails there too): expected is TF 1.x's meaning, the layer's own convolution
    (strides, padding) of the inputs with the given kernel."""
    images = np.random.RandomState(1).rand(8, 5, 5, 2).astype(np.float32)
    kernel = np.random.RandomState(2).rand(3, 3, 2, 4).astype(np.float32)

    def model_fn(features, labels, mode, params):
        layer = _DoubledKernelConv2D(4, 3, strides=2, padding="same",
                                     kernel_initializer=v1.constant_initializer(kernel),
                                     bias_initializer=v1.constant_initializer(0.5))
        return tec.TPUEstimatorSpec(mode, predictions={"y": layer(features)})

    estimator = tec.TPUEstimator(model_fn=model_fn, use_tpu=False, predict_batch_size=4,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    predicted = np.stack([p["y"] for p in estimator.predict(
        lambda params: tf.data.Dataset.from_tensor_slices(images).batch(params["batch_size"]))])
    expected = tf.nn.conv2d(images, 2.0 * kernel, strides=2, padding="SAME").numpy() + 0.5
    np.testing.assert_allclose(predicted, expected, rtol=1e-5)


# The original (TF 2.15 + tensorflow-estimator 2.15, use_tpu=False) after 3 steps of batch 8.
ORIGINAL_KERAS_INPUT_TENSOR = {
    "hidden/bias": [0.06796687096357346, 0.061428170651197433, 0.06479029357433319],
    "hidden/kernel": [[0.08650804311037064, -0.21051737666130066, 0.3252509832382202],
                      [0.38223695755004883, 0.4843396842479706, -0.5794436931610107]],
    "out/bias": [-0.1265038549900055],
    "out/kernel": [[0.4773178994655609], [0.4817834198474884], [0.48478978872299194]],
}


_KERAS_HIDDEN_KERNEL = [[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]


def _train_keras_net(net_fn, replicas, model_dir, request):
    """Trains `net_fn(x) -> predictions` (Keras layers built in model_fn; MSE, SGD 0.1 in a
    CrossShardOptimizer) 3 steps of batch 8 on the Keras tests' data: 1 replica with CPU
    semantics or 8 with TPU semantics. Returns the estimator."""
    features = np.linspace(-1, 1, 16, dtype=np.float32).reshape(8, 2)
    labels = features[:, :1] * 0.5 - features[:, 1:] * 0.25

    def model_fn(features, labels, mode, params):
        loss = v1.losses.mean_squared_error(labels, net_fn(features["x"]))
        return helpers.sgd_spec(mode, loss)

    def input_fn(params):
        return tf.data.Dataset.from_tensor_slices(({"x": features}, labels)).repeat().batch(
            params["batch_size"], drop_remainder=True)

    config = tec.RunConfig(model_dir=str(model_dir))
    if replicas == 8:
        config = tec.RunConfig(model_dir=str(model_dir),
                               train_distribute=request.getfixturevalue("eight_devices"))
    estimator = tec.TPUEstimator(model_fn, config=config, use_tpu=replicas == 8,
                                 train_batch_size=8)
    estimator.train(input_fn, max_steps=3)
    return estimator


@pytest.mark.slow  # trains for several seconds
@pytest.mark.parametrize("replicas", [1, 8])
def test_keras_input_wrapping_a_graph_tensor_in_model_fn(replicas, tmp_path, request):
    """tensorflow/tpu's embedding sample: `tf.keras.layers.Input(tensor=net)` then Keras
    Dense layers in model_fn. TF 1.x returned the tensor itself; tf_keras' KerasTensor sent
    the v1 Dense layer into a RecursionError. 8 replicas: the same weights on the global
    batch."""
    import tpu_estimator_compat.v1 as tf1  # noqa: PLC0415

    def net_fn(x):
        net = tf1.keras.layers.Input(tensor=x)
        net = tf1.keras.layers.Dense(
            3, activation="relu", name="hidden",
            kernel_initializer=v1.constant_initializer(_KERAS_HIDDEN_KERNEL),
            bias_initializer=v1.constant_initializer(0.1))(net)
        return tf1.keras.layers.Dense(
            1, name="out", kernel_initializer=v1.constant_initializer(0.5))(net)

    estimator = _train_keras_net(net_fn, replicas, tmp_path, request)
    for name, expected in ORIGINAL_KERAS_INPUT_TENSOR.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), expected, rtol=1e-5,
                                   err_msg=name)
    with tf.Graph().as_default():  # TF1 graph code outside the estimator: the same
        tensor = v1.placeholder(tf.float32, [None, 2])
        assert tf1.keras.Input(tensor=tensor) is tensor
    assert not isinstance(tf1.keras.Input(shape=[2]), tf.Tensor)  # a KerasTensor, as before


# The original (TF 2.15 + tensorflow-estimator 2.15, graph mode, use_tpu=False, plain
# GradientDescentOptimizer) after 3 steps of batch 8: the same numbers as above, under the
# names Keras gives nested models' layers in a TF1 graph.
ORIGINAL_NESTED_KERAS_MODELS = {
    "sequential_1/sequential/dense/bias": ORIGINAL_KERAS_INPUT_TENSOR["hidden/bias"],
    "sequential_1/sequential/dense/kernel": ORIGINAL_KERAS_INPUT_TENSOR["hidden/kernel"],
    "sequential_1/dense_1/bias": ORIGINAL_KERAS_INPUT_TENSOR["out/bias"],
    "sequential_1/dense_1/kernel": ORIGINAL_KERAS_INPUT_TENSOR["out/kernel"],
}


@pytest.mark.slow  # trains for several seconds
@pytest.mark.parametrize("replicas", [1, 8])
def test_keras_models_nested_in_model_fn_keep_tf1_variable_names(replicas, tmp_path, request):
    """`tf.keras.Sequential` models (one inside another) called in model_fn: Keras builds
    their layers under `tf.init_scope()`, where the name scope is the eager context's. The
    variables are named as TF1 named them ('sequential_1/sequential/dense/kernel'; they were
    'sequential_1/kernel'), so TF1 checkpoints restore, with the original's numbers."""
    import tpu_estimator_compat.v1 as tf1  # noqa: PLC0415

    def net_fn(x):
        inner = tf1.keras.Sequential([tf1.keras.layers.Dense(
            3, activation="relu",
            kernel_initializer=v1.constant_initializer(_KERAS_HIDDEN_KERNEL),
            bias_initializer=v1.constant_initializer(0.1))])
        model = tf1.keras.Sequential([inner, tf1.keras.layers.Dense(
            1, kernel_initializer=v1.constant_initializer(0.5))])
        return model(x)

    estimator = _train_keras_net(net_fn, replicas, tmp_path, request)
    assert sorted(estimator.get_variable_names()) == ["global_step",
                                                      *sorted(ORIGINAL_NESTED_KERAS_MODELS)]
    for name, expected in ORIGINAL_NESTED_KERAS_MODELS.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), expected, rtol=1e-5,
                                   err_msg=name)


# The original (TF 2.15 + tensorflow-estimator 2.15, graph mode, use_tpu=False) after 2
# steps of GradientDescentOptimizer(0.1) on the batch below (flattened values).
ORIGINAL_LAYER_BUILT_IN_BUILD = {
    "outer/inner/bias": [0.11065885424613953] * 2,
    "outer/inner/kernel": [0.420929878950119] * 2 + [0.4217977821826935] * 2,
    "sep/bias": [0.16366317868232727],
    "sep/depthwise_kernel": [v for v in (
        0.21904726326465607, 0.21296755969524384, 0.21961170434951782, 0.21409332752227783,
        0.20752467215061188, 0.21490156650543213, 0.22142158448696136, 0.21620018780231476,
        0.22206392884254456) for _ in range(2)],
    "sep/pointwise_kernel": [0.34392106533050537] * 2,
}


def test_a_layer_made_in_another_layers_build_leaves_model_fns_layers_tf1(tmp_path):
    """google/automl's EfficientDet: its resampling layer makes a Conv2D in `build()`, which
    tf_keras runs under `tf.init_scope()` (eager here); that picked TF2 base classes for the
    whole convolution family, and the SeparableConv2D model_fn had made (a TF1 layer) failed
    when called: AttributeError: 'SeparableConv2D' object has no attribute
    '_saved_model_inputs_spec'. TF 1.x built both in its graph, as TF1 layers."""
    import tpu_estimator_compat.v1 as tf1  # noqa: PLC0415

    class Outer(tf1.keras.layers.Layer):
        def build(self, input_shape):
            self.inner = tf1.keras.layers.Conv2D(
                2, 1, kernel_initializer=v1.constant_initializer(0.5), name="inner")

        def call(self, inputs):
            return self.inner(inputs)

    def model_fn(features, labels, mode, params):
        separable = tf1.keras.layers.SeparableConv2D(
            1, 3, padding="same", depthwise_initializer=v1.constant_initializer(0.25),
            pointwise_initializer=v1.constant_initializer(0.5), name="sep")
        outputs = separable(Outer(name="outer")(features["x"]))
        loss = v1.reduce_mean(v1.square(outputs - labels))
        return tec.TPUEstimatorSpec(mode, loss=loss, train_op=v1.train.GradientDescentOptimizer(
            0.1).minimize(loss, v1.train.get_global_step()))

    images = np.linspace(-1, 1, 8 * 4 * 4 * 2, dtype=np.float32).reshape(8, 4, 4, 2)
    targets = np.linspace(0, 1, 8 * 4 * 4, dtype=np.float32).reshape(8, 4, 4, 1)

    def input_fn(params):
        return tf.data.Dataset.from_tensor_slices(({"x": images}, targets)).repeat().batch(
            params["batch_size"], drop_remainder=True)

    estimator = tec.TPUEstimator(model_fn, use_tpu=False, train_batch_size=8,
                                 config=tec.RunConfig(model_dir=str(tmp_path)))
    estimator.train(input_fn, max_steps=2)
    for name, expected in ORIGINAL_LAYER_BUILT_IN_BUILD.items():
        np.testing.assert_allclose(np.ravel(estimator.get_variable_value(name)), expected,
                                   rtol=1e-5, err_msg=name)


def test_a_plain_estimators_evaluation_keeps_static_drop_remainder_batches(tmp_path):
    """google/automl's EfficientDet reshapes its labels to `[batch, h, w, -1]` with the static
    batch of its drop_remainder=True batches, in a plain `tf.estimator.Estimator` too (no
    batch size of its own): its evaluation got None there. The original (TF 2.15 Estimator)
    gave model_fn [8, 2] in train and in evaluate; the loss over the two full batches of 20
    rows was 15.5."""
    import tpu_estimator_compat.v1 as tf1  # noqa: PLC0415

    rows = np.arange(40, dtype=np.float32).reshape(20, 2)
    shapes = []

    def model_fn(features, labels, mode, params):
        shapes.append((mode, features.shape.as_list()))
        w = v1.get_variable("w", [], initializer=v1.ones_initializer())
        loss = tf.reduce_mean(v1.reshape(features, [features.shape[0], -1]) * w)
        train_op = v1.train.GradientDescentOptimizer(0.0).minimize(
            loss, v1.train.get_global_step())
        return tf1.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn(params):
        return tf.data.Dataset.from_tensor_slices(rows).batch(8, drop_remainder=True)

    estimator = tf1.estimator.Estimator(model_fn, model_dir=str(tmp_path))
    estimator.train(input_fn, steps=1)
    results = estimator.evaluate(input_fn)
    assert {mode for mode, _ in shapes} == {"train", "eval"}
    assert all(shape == [8, 2] for _, shape in shapes), shapes
    assert results["loss"] == pytest.approx(15.5)


FED_X = np.arange(24, dtype=np.float32).reshape(12, 2) / 10.0
FED_Y = (FED_X @ np.array([[1.0], [-2.0]], np.float32) + 0.5).astype(np.float32)


class _InitHook(v1.train.SessionRunHook):
    """lukasturcani/dnn's: the iterator's initializer, run with the data fed (if any)."""

    def after_create_session(self, session, coord):
        session.run(self.init, self.feed_dict)


def _fed_input(train, placeholder_shapes, reinitializable=None, hook_class=_InitHook):
    """input_fn and its hook; `placeholder_shapes` None: the arrays are constants (an
    initializable iterator over TFRecords, as TropComplique's IteratorInitializerHook);
    "table_initializers": constants, the initializer in the TABLE_INITIALIZERS collection.
    `reinitializable` "one" or "two": a `from_structure` iterator with that many
    `make_initializer`s, the hook running the one of the arrays."""
    hook = hook_class()

    def input_fn():
        if placeholder_shapes and placeholder_shapes != "table_initializers":
            x, y = (v1.placeholder(tf.float32, shape) for shape in placeholder_shapes)
            hook.feed_dict = {x: FED_X, y: FED_Y}
        else:
            x, y = tf.constant(FED_X), tf.constant(FED_Y)
            hook.feed_dict = None
        dataset = v1.data.Dataset.from_tensor_slices((x, y)).batch(4)
        dataset = dataset.repeat() if train else dataset
        if reinitializable:  # TropComplique's FaceBoxes pipeline
            iterator = v1.data.Iterator.from_structure(dataset.output_types,
                                                       dataset.output_shapes)
            if reinitializable == "two":  # the hook runs the second one
                iterator.make_initializer(
                    v1.data.Dataset.from_tensor_slices((x[::-1] * 3.0, y[::-1])).batch(4))
            hook.init = iterator.make_initializer(dataset)
        else:
            iterator = dataset.make_initializable_iterator()
            hook.init = iterator.initializer
        if placeholder_shapes == "table_initializers":  # TF1's Scaffold runs it
            v1.add_to_collection(v1.GraphKeys.TABLE_INITIALIZERS, iterator.initializer)
        features, labels = iterator.get_next()
        return {"x": features}, labels
    return input_fn, hook


def _linear_model_fn(features, labels, mode):
    w = v1.get_variable("w", [2, 1], initializer=v1.zeros_initializer())
    b = v1.get_variable("b", [], initializer=v1.zeros_initializer())
    predictions = tf.matmul(features["x"], w) + b
    loss = v1.losses.mean_squared_error(labels, predictions)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, v1.train.get_global_step())
    return tec.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops={
        "mae": v1.metrics.mean_absolute_error(labels, predictions)})


@pytest.mark.slow  # trains and evaluates for several seconds
@pytest.mark.parametrize("placeholder_shapes,reinitializable", [
    ((FED_X.shape, FED_Y.shape), None), (([None, 2], [None, 1]), None), (None, None),
    ("table_initializers", None), (None, "one"), (([None, 2], [None, 1]), "one"),
    (([None, 2], [None, 1]), "two")],
    ids=["placeholders", "placeholders_of_unknown_rows", "no_placeholders",
         "in_table_initializers", "reinitializable", "reinitializable_placeholders",
         "reinitializable_of_two_datasets"])
def test_an_initializable_iterator_a_hook_initializes(placeholder_shapes, reinitializable,
                                                      tmp_path):
    """lukasturcani/dnn's cifar100/simple_cnn.py: input_fn builds placeholders of the whole
    arrays, `from_tensor_slices` over them and `make_initializable_iterator()`, and hands its
    initializer and a feed_dict of the arrays to a hook that runs them in
    after_create_session; TropComplique's FaceBoxes pipeline: a reinitializable iterator
    (`tf.data.Iterator.from_structure`), its `make_initializer(dataset)` run by the hook.
    Expected: the original Estimator's weights after 5 steps and its evaluation (TF 2.15),
    the same in all forms."""
    estimator = tec.Estimator(_linear_model_fn, model_dir=str(tmp_path))
    train_input_fn, train_hook = _fed_input(True, placeholder_shapes, reinitializable)
    estimator.train(train_input_fn, hooks=[train_hook], max_steps=5)
    np.testing.assert_array_equal(estimator.get_variable_value("w").ravel(),
                                  np.float32([-0.3416057825088501, -0.3513994514942169]))
    assert estimator.get_variable_value("b") == np.float32(-0.09793708473443985)
    eval_input_fn, eval_hook = _fed_input(False, placeholder_shapes, reinitializable)
    results = estimator.evaluate(eval_input_fn, hooks=[eval_hook])  # the 3 batches, once
    assert results["loss"] == np.float32(0.0540216863155365)
    assert results["mae"] == np.float32(0.19552479684352875)

    if placeholder_shapes == "table_initializers":
        assert estimator.evaluate(_fed_input(False, placeholder_shapes)[0]) == results
        return
    # no hook runs the initializer:
    unfed_input_fn, _ = _fed_input(False, placeholder_shapes, reinitializable)
    with pytest.raises(tf.errors.OpError,  # TF1's was a FailedPreconditionError too
                       match=r"FailedPreconditionError: input_fn's initializable iterator was "
                             r"read before its initializer ran"):
        estimator.evaluate(unfed_input_fn)


def test_an_unread_reinitializable_iterator_leaves_the_dataset_served(tmp_path):
    """An input_fn may make a `from_structure` iterator it does not read and return the
    Dataset: the Dataset is read as usual (the original's weights after 5 steps, as above)."""
    def input_fn():
        dataset = v1.data.Dataset.from_tensor_slices(({"x": FED_X}, FED_Y)).batch(4).repeat()
        v1.data.Iterator.from_structure(dataset.output_types, dataset.output_shapes)
        return dataset

    estimator = tec.Estimator(_linear_model_fn, model_dir=str(tmp_path))
    estimator.train(input_fn, max_steps=5)
    np.testing.assert_array_equal(estimator.get_variable_value("w").ravel(),
                                  np.float32([-0.3416057825088501, -0.3513994514942169]))


class _RestartingHook(_InitHook):
    """Also runs the initializer again after the second step (TF1 restarted the iterator)."""

    def after_run(self, run_context, run_values):
        self.steps = getattr(self, "steps", 0) + 1
        if self.steps == 2:
            run_context.session.run(self.init, self.feed_dict)


@pytest.mark.parametrize("reinitializable", [None, "two"])
def test_an_iterator_initialized_again_after_reading_is_refused(reinitializable, tmp_path):
    """Restarting input_fn's iterator mid-call is not served (the engine reads ahead of the
    steps): the second run of the initializer raises, naming the fix, rather than going on
    with the old elements."""
    estimator = tec.Estimator(_linear_model_fn, model_dir=str(tmp_path))
    input_fn, hook = _fed_input(True, ([None, 2], [None, 1]), reinitializable,
                                _RestartingHook)
    with pytest.raises(NotImplementedError, match=(
            r"input_fn's iterator initializer ran again after the iterator was read: "
            r"restarting the iterator within an Estimator call, as TF1 did, is not served")):
        estimator.train(input_fn, hooks=[hook], max_steps=5)
    assert hook.steps == 2  # the first run, in after_create_session, was served


def test_a_feedable_iterator_is_refused_naming_the_fix(tmp_path):
    """A feedable iterator (`from_string_handle`, its handle fed per session run) is not
    served: the error names it and the iterators that are (TensorFlow's own eager error
    named neither)."""
    def input_fn():
        dataset = v1.data.Dataset.from_tensor_slices(({"x": FED_X}, FED_Y)).batch(4)
        handle = v1.placeholder(tf.string, [])
        iterator = v1.data.Iterator.from_string_handle(
            handle, dataset.output_types, dataset.output_shapes)
        return iterator.get_next()

    estimator = tec.Estimator(_linear_model_fn, model_dir=str(tmp_path))
    with pytest.raises(NotImplementedError, match=(
            r"input_fn makes a feedable iterator \(`tf.data.Iterator.from_string_handle`\), "
            r"which is not served: .* Return the `get_next\(\)` of the dataset's own iterator "
            r"instead: a reinitializable iterator \(`tf.data.Iterator.from_structure")):
        estimator.train(input_fn, steps=1)
