"""`tf.contrib.layers` from the drop-in namespace: TF1 variable names, shapes and numerics."""
import numpy as np
import pytest
import tensorflow as tf

import tpu_estimator_compat.v1 as v1
from tpu_estimator_compat.tf1_behaviour.shapes import tf1_shapes
from tpu_estimator_compat.v1.contrib import layers as contrib_layers

_RNG = np.random.RandomState(0)


def _variables(collection=v1.GraphKeys.GLOBAL_VARIABLES):
    return {v.op.name: v.shape.as_list() for v in v1.get_collection(collection)}


def _run(fetches, feed=None):
    with v1.Session() as session:
        session.run(v1.global_variables_initializer())
        return session.run(fetches, feed)


def _layer_norm_reference(x, axes):
    mean = x.mean(axis=axes, keepdims=True)
    variance = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(variance + 1e-12)


# layer_norm ---------------------------------------------------------------------------------

def test_layer_norm_bert_call_names_and_numerics():
    x = _RNG.randn(2, 5, 8).astype(np.float32)
    with tf.Graph().as_default():
        out = contrib_layers.layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1,
                                        scope="output/LayerNorm")
        assert _variables() == {"output/LayerNorm/beta": [8], "output/LayerNorm/gamma": [8]}
        assert _variables(v1.GraphKeys.MODEL_VARIABLES) == _variables()
        assert _variables(v1.GraphKeys.TRAINABLE_VARIABLES) == _variables()
        np.testing.assert_allclose(_run(out), _layer_norm_reference(x, (2,)), atol=1e-5)


def test_layer_norm_defaults_normalise_all_but_batch_axis():
    x = _RNG.randn(3, 4, 6).astype(np.float32)
    with tf.Graph().as_default():
        first = contrib_layers.layer_norm(x)
        contrib_layers.layer_norm(x, center=False, trainable=False)
        assert _variables() == {"LayerNorm/beta": [6], "LayerNorm/gamma": [6],
                                "LayerNorm_1/gamma": [6]}
        assert "LayerNorm_1/gamma" not in _variables(v1.GraphKeys.TRAINABLE_VARIABLES)
        np.testing.assert_allclose(_run(first), _layer_norm_reference(x, (1, 2)), atol=1e-5)


def test_layer_norm_rejects_axes_beyond_rank():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"begin_params_axis \(-1\) and begin_norm_axis "
                                             r"\(2\) must be < rank\(inputs\) \(2\)"):
            contrib_layers.layer_norm(tf.zeros([2, 3]), begin_norm_axis=2)


# fully_connected / linear -------------------------------------------------------------------

def test_fully_connected_names_relu_and_regularizer():
    x = _RNG.randn(4, 3).astype(np.float32)
    weights = _RNG.randn(3, 5).astype(np.float32)
    with tf.Graph().as_default():
        out = contrib_layers.fully_connected(
            x, 5, weights_initializer=v1.constant_initializer(weights),
            biases_initializer=v1.constant_initializer(0.5),
            weights_regularizer=contrib_layers.l2_regularizer(0.1))
        assert _variables() == {"fully_connected/weights": [3, 5], "fully_connected/biases": [5]}
        assert _variables(v1.GraphKeys.MODEL_VARIABLES) == _variables()
        (reg_loss,) = v1.losses.get_regularization_losses()
        got, got_reg = _run([out, reg_loss])
    np.testing.assert_allclose(got, np.maximum(x @ weights + 0.5, 0.0), rtol=1e-5)
    np.testing.assert_allclose(got_reg, 0.1 * np.sum(weights ** 2) / 2, rtol=1e-5)


def test_fully_connected_rank3_with_normalizer_has_no_biases():
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 7, 3])
        out = contrib_layers.fully_connected(x, 4, activation_fn=None,
                                             normalizer_fn=contrib_layers.layer_norm)
        assert out.shape.as_list() == [None, 7, 4]
        assert _variables() == {"fully_connected/weights": [3, 4],
                                "fully_connected/LayerNorm/beta": [4],
                                "fully_connected/LayerNorm/gamma": [4]}


def test_linear_and_outputs_collections():
    with tf.Graph().as_default():
        out = contrib_layers.linear(-tf.ones([2, 3]), 2, scope="logits",
                                    outputs_collections="endpoints",
                                    weights_initializer=v1.ones_initializer())
        assert v1.get_collection("endpoints") == [out]
        assert out.aliases == ["logits"]
        assert sorted(_variables()) == ["logits/biases", "logits/weights"]
        np.testing.assert_array_equal(_run(out), np.full([2, 2], -3.0))  # No relu.


def test_fully_connected_rejects_non_int_num_outputs():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="num_outputs type should be one of"):
            contrib_layers.fully_connected(tf.ones([2, 3]), 4.0)


# conv2d, flatten, dropout ------------------------------------------------------------------

def test_conv2d_names_shapes_and_valid_numerics():
    x = _RNG.randn(2, 5, 5, 2).astype(np.float32)
    kernel = _RNG.randn(2, 2, 2, 3).astype(np.float32)
    with tf.Graph().as_default():
        valid = contrib_layers.conv2d(x, 3, [2, 2], padding="VALID", activation_fn=None,
                                      weights_initializer=v1.constant_initializer(kernel))
        strided = contrib_layers.conv2d(x, 4, 3, stride=2)
        assert _variables() == {"Conv/weights": [2, 2, 2, 3], "Conv/biases": [3],
                                "Conv_1/weights": [3, 3, 2, 4], "Conv_1/biases": [4]}
        assert strided.shape.as_list() == [2, 3, 3, 4]
        got = _run(valid)
    expected = np.zeros([2, 4, 4, 3], np.float32)
    for i in range(4):
        for j in range(4):
            expected[:, i, j, :] = np.einsum("nhwc,hwcd->nd", x[:, i:i + 2, j:j + 2, :], kernel)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_flatten_static_and_unknown_batch():
    with tf.Graph().as_default():
        assert contrib_layers.flatten(tf.zeros([2, 3, 4])).shape.as_list() == [2, 12]
        unknown_batch = v1.placeholder(tf.float32, [None, 3, 4])
        assert contrib_layers.flatten(unknown_batch).shape.as_list() == [None, 12]
        assert contrib_layers.flatten(tf.zeros([5])).shape.as_list() == [5, 1]


def test_dropout_training_scales_kept_values_and_inference_is_identity():
    x = np.ones([200, 50], np.float32)
    with tf.Graph().as_default():
        is_training = v1.placeholder(tf.bool, [])
        out = contrib_layers.dropout(x, keep_prob=0.8, is_training=is_training)
        with v1.Session() as session:
            trained = session.run(out, {is_training: True})
            inferred = session.run(out, {is_training: False})
    assert set(np.unique(trained)) <= {0.0, 1.25}
    assert abs((trained > 0).mean() - 0.8) < 0.02
    np.testing.assert_array_equal(inferred, x)


# batch_norm ---------------------------------------------------------------------------------

def test_batch_norm_variables_default_scale_off():
    with tf.Graph().as_default():
        contrib_layers.batch_norm(tf.zeros([2, 4, 4, 3]))
        contrib_layers.batch_norm(tf.zeros([2, 3]), scale=True, scope="bn2")
        assert _variables() == {
            "BatchNorm/beta": [3], "BatchNorm/moving_mean": [3],
            "BatchNorm/moving_variance": [3], "bn2/beta": [3], "bn2/gamma": [3],
            "bn2/moving_mean": [3], "bn2/moving_variance": [3]}
        assert sorted(_variables(v1.GraphKeys.TRAINABLE_VARIABLES)) == [
            "BatchNorm/beta", "bn2/beta", "bn2/gamma"]


@pytest.mark.parametrize("shape, ddof", [([4, 3, 3, 2], 1), ([6, 2], 1), ([4, 5, 2], 0)])
def test_batch_norm_training_output_and_update_ops(shape, ddof):
    """Rank 2/4 use the fused kernel (moving variance gets Bessel's correction, as in TF1)."""
    x = _RNG.randn(*shape).astype(np.float32) * 3 + 1
    flat = x.reshape(-1, shape[-1])
    with tf.Graph().as_default():
        out = contrib_layers.batch_norm(x, decay=0.9, epsilon=0.001)
        update_ops = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
        assert len(update_ops) == 2
        moving = [v for v in v1.global_variables() if "moving" in v.op.name]
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            got = session.run(out)
            session.run(update_ops)
            moving_mean, moving_variance = session.run(moving)
    expected = (x - flat.mean(0)) / np.sqrt(flat.var(0) + 0.001)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(moving_mean, 0.1 * flat.mean(0), rtol=1e-4)
    np.testing.assert_allclose(moving_variance, 0.9 + 0.1 * flat.var(0, ddof=ddof), rtol=1e-4)


def test_batch_norm_in_place_updates_and_inference():
    x = _RNG.randn(8, 3).astype(np.float32) + 2
    with tf.Graph().as_default():
        trained = contrib_layers.batch_norm(x, decay=0.5, updates_collections=None, scope="bn")
        assert v1.get_collection(v1.GraphKeys.UPDATE_OPS) == []
        inferred = contrib_layers.batch_norm(x, is_training=False, scope="bn", reuse=True)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            np.testing.assert_allclose(session.run(inferred), x / np.sqrt(1.001), rtol=1e-5)
            session.run(trained)
            moving_mean = 0.5 * x.mean(0)
            moving_variance = 0.5 + 0.5 * x.var(0, ddof=1)
            np.testing.assert_allclose(
                session.run(inferred), (x - moving_mean) / np.sqrt(moving_variance + 0.001),
                rtol=1e-4)


def test_batch_norm_nchw_plain_path_normalises_axis_1():
    x = _RNG.randn(4, 2, 3, 3).astype(np.float32)
    with tf.Graph().as_default():
        out = contrib_layers.batch_norm(x, data_format="NCHW", fused=False)
        assert _variables()["BatchNorm/beta"] == [2]
        got = _run(out)
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    variance = x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(variance + 0.001), rtol=1e-4,
                               atol=1e-5)


def test_batch_norm_rejects_bad_data_format_and_renorm():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="data_format has to be either NCHW or NHWC."):
            contrib_layers.batch_norm(tf.zeros([2, 3]), data_format="NWC")
        with pytest.raises(NotImplementedError, match="renorm"):
            contrib_layers.batch_norm(tf.zeros([2, 3]), renorm=True)


# initializers and regularizers -------------------------------------------------------------

@pytest.mark.parametrize("make, shape, variance", [
    (contrib_layers.variance_scaling_initializer, [400, 300], 2.0 / 400),
    (lambda: contrib_layers.variance_scaling_initializer(uniform=True), [400, 300], 2 / 400),
    (lambda: contrib_layers.variance_scaling_initializer(mode="FAN_OUT"), [300, 400],
     2.0 / 400),
    (contrib_layers.xavier_initializer, [300, 500], 2.0 / 800),
    (lambda: contrib_layers.xavier_initializer(uniform=False), [300, 500], 2.0 / 800),
    (contrib_layers.variance_scaling_initializer, [3, 3, 40, 64], 2.0 / 360),
])
def test_initializer_variance_statistics(make, shape, variance):
    with tf.Graph().as_default():
        values = _run(make()(shape))
    assert values.shape == tuple(shape)
    assert abs(values.mean()) < 0.05 * np.sqrt(variance)
    assert values.std() == pytest.approx(np.sqrt(variance), rel=0.03)


def test_initializer_bounds_and_seed():
    with tf.Graph().as_default():
        uniform = contrib_layers.xavier_initializer(seed=3)([20, 30])
        normal = contrib_layers.variance_scaling_initializer(seed=3)([100, 100])
        again = contrib_layers.xavier_initializer(seed=3)([20, 30])
        got_uniform, got_normal, got_again = _run([uniform, normal, again])
    assert np.abs(got_uniform).max() <= np.sqrt(6.0 / 50)
    assert np.abs(got_normal).max() <= 2 * np.sqrt(1.3 * 2.0 / 100)
    np.testing.assert_array_equal(got_uniform, got_again)


def test_initializer_errors():
    with pytest.raises(TypeError, match=r"Unknown mode FAN_MAX \[FAN_IN, FAN_OUT, FAN_AVG\]"):
        contrib_layers.variance_scaling_initializer(mode="FAN_MAX")
    with pytest.raises(TypeError, match="Cannot create initializer for non-floating point"):
        contrib_layers.xavier_initializer(dtype=tf.int32)


def test_regularizers_values_names_and_errors():
    w = np.array([[1.0, -2.0], [3.0, -4.0]], np.float32)
    with tf.Graph().as_default():
        l2 = contrib_layers.l2_regularizer(0.5)(tf.constant(w))
        l1 = contrib_layers.l1_regularizer(0.25, scope="my_l1")(tf.constant(w))
        assert l2.op.name == "l2_regularizer" and l1.op.name == "my_l1"
        np.testing.assert_allclose(_run([l2, l1]), [0.5 * 30 / 2, 0.25 * 10])
    assert contrib_layers.l2_regularizer(0.0)(w) is None
    with pytest.raises(ValueError, match="scale cannot be an integer: 1"):
        contrib_layers.l2_regularizer(1)
    with pytest.raises(ValueError, match="Setting a scale less than 0 on a regularizer: -0.1."):
        contrib_layers.l1_regularizer(-0.1)


# Inside a tf.function trace (how the engine runs model_fn) ----------------------------------

def _one_variable_per_name(store):
    """A variable creator like the engine's: create once (lifted out), reuse on re-traces.

    A FuncGraph shares the outer graph's collections, where v1 variable scopes keep their
    stores; each trace needs fresh ones (as the engine's VariableStore does).
    """
    graph = v1.get_default_graph()
    for key in (("__variable_store",), ("__varscope",)):
        graph.clear_collection(key)

    def creator(next_creator, **kwargs):
        name = kwargs["name"]
        if name not in store:
            with tf.init_scope():
                store[name] = next_creator(**kwargs)
        return store[name]
    return v1.variable_creator_scope(creator)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_layers_in_tf_function_trace_with_tf1_shapes():
    x = _RNG.randn(2, 4, 4, 3).astype(np.float32)
    weights = _RNG.randn(32, 3).astype(np.float32)
    store = {}

    @tf.function
    def model(images):
        with _one_variable_per_name(store), tf1_shapes():
            assert images.shape[-1].value == 3
            net = contrib_layers.conv2d(images, 2, 1, activation_fn=None,
                                        weights_initializer=v1.ones_initializer())
            net = contrib_layers.batch_norm(net, updates_collections=None, decay=0.5)
            net = contrib_layers.flatten(net)
            net = contrib_layers.fully_connected(
                net, 3, activation_fn=None, weights_initializer=v1.constant_initializer(weights))
            return contrib_layers.layer_norm(net, begin_norm_axis=-1)

    got = model(tf.constant(x)).numpy()
    assert sorted(store) == [
        "BatchNorm/beta", "BatchNorm/moving_mean", "BatchNorm/moving_variance", "Conv/biases",
        "Conv/weights", "LayerNorm/beta", "LayerNorm/gamma", "fully_connected/biases",
        "fully_connected/weights"]
    conv = np.repeat(x.sum(-1, keepdims=True), 2, axis=-1)
    flat = conv.reshape(-1, 2)
    normed = ((conv - flat.mean(0)) / np.sqrt(flat.var(0) + 0.001)).reshape(2, -1)
    np.testing.assert_allclose(got, _layer_norm_reference(normed @ weights, (1,)), atol=1e-4)
    np.testing.assert_allclose(store["BatchNorm/moving_mean"].numpy(), 0.5 * flat.mean(0),
                               rtol=1e-5)
