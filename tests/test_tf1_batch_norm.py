"""TF1 subclasses of `tf.layers.BatchNormalization` overriding `_moments` with TF 1.x's
signature (google-research/noisystudent's and EfficientNet's cross-replica
`TpuBatchNormalization`)."""
import numpy as np
import pytest
import tensorflow as tf

from tpu_estimator_compat import v1

X = np.random.RandomState(0).rand(6, 3).astype(np.float32)


def _layer_class(calls):
    class ScaledMoments(v1.layers.BatchNormalization):  # pylint: disable=abstract-method
        def _moments(self, inputs, reduction_axes, keep_dims):  # TF 1.x's signature
            mean, variance = super()._moments(inputs, reduction_axes, keep_dims=keep_dims)
            calls.append(keep_dims)
            return mean, variance * 4.0  # what an override computes is what normalizes
    return ScaledMoments


def test_a_tf1_moments_override_computes_the_training_statistics():
    calls = []
    with tf.Graph().as_default():
        layer = _layer_class(calls)(epsilon=0.0, fused=False)
        out = layer(tf.constant(X), training=True)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            got = session.run(out)
    # TF 1.x's BatchNormalization: (x - mean) / sqrt(variance) with the override's moments.
    expected = (X - X.mean(axis=0)) / np.sqrt(X.var(axis=0) * 4.0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert calls == [False]


def test_a_mask_given_to_a_tf1_override_is_refused_naming_the_fix():
    layer = _layer_class([])(fused=False)
    with pytest.raises(ValueError, match=r"_moments\(inputs, reduction_axes, keep_dims\)"):
        with tf.Graph().as_default():
            layer(tf.constant(X), training=True, mask=tf.constant([True] * 6))
