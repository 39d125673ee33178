"""TF 1.x Keras convolution layers' `_convolution_op`, for TF1-style subclasses.

TF 1.x's `Conv.build` made `self._convolution_op`, a callable `(inputs, kernel) -> outputs`.
Subclasses of `tf.layers.Conv2D` (or Keras 2's `Conv2D`) that transform the kernel before
convolving (equalized learning rate, spectral normalization) override `call` and use it.
tf_keras' layers convolve with the method `convolution_op(inputs, kernel)`: `_convolution_op`
is served as that method. A layer that sets `self._convolution_op` itself keeps its own.
"""
from tpu_estimator_compat.tf_internals import keras_and_slim


class _TF1ConvolutionOp:
    """A non-data descriptor, so that an instance attribute of that name wins."""

    def __get__(self, layer, owner=None):
        return self if layer is None else layer.convolution_op


def install():
    """Gives tf_keras' convolution layers `_convolution_op` when tf_keras is imported (a
    program defining such a subclass has imported it); idempotent."""
    conv_base = keras_and_slim.loaded_keras_conv_base()
    if conv_base is not None:
        keras_and_slim.add_tf1_convolution_op(conv_base, _TF1ConvolutionOp())
