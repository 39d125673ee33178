"""`tf.layers.BatchNormalization` for TF1 subclasses that override `_moments`.

TF 1.x's layer computed a batch's statistics in `_moments(inputs, reduction_axes,
keep_dims)`, which programs override for cross-replica batch normalization (EfficientNet's
and MnasNet's `TpuBatchNormalization`: the shard's moments, averaged over replicas).
tf_keras's layer calls `_moments(..., mask=mask)`, which such an override does not take: the
subclass's `_moments` is given the TF1 signature's call, and a mask, which TF 1.x's layer did
not have, raises naming the fix.
"""
import functools
import inspect

from tpu_estimator_compat.tf_internals import keras_and_slim

_legacy_layers = keras_and_slim.legacy_tf_layers()


class BatchNormalization(_legacy_layers.BatchNormalization):
    """tf_keras's TF1 `tf.layers.BatchNormalization`; see the module docstring."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        moments = keras_and_slim.defined_moments(cls)
        if moments is None or "mask" in inspect.signature(moments).parameters:
            return

        @functools.wraps(moments)
        def tf1_moments(self, inputs, reduction_axes, keep_dims, mask=None):
            if mask is not None:
                raise ValueError(
                    f"{cls.__name__} overrides `_moments(inputs, reduction_axes, keep_dims)` "
                    "as TF 1.x declared it, without `mask`, but the layer was called with a "
                    "mask: call it without one, or give its _moments a `mask=None` argument.")
            return moments(self, inputs, reduction_axes, keep_dims=keep_dims)

        cls._moments = tf1_moments
