"""TF 1.x's Keras layers in TF1 code: TF1 layer classes, and `_convolution_op`.

Keras layers and models that TF1 code builds (model_fn, input_fn, metric_fn, hooks, inside
the engine's `tf1_shapes()`) are tf_keras's TF1 classes, as TF 1.x's graph made them, also
those a layer's `build()` constructs: tf_keras builds under `tf.init_scope()`, which here lifts
to eager execution, where it would pick TF2 classes and set them on the hierarchy the layers
already made share (a `SeparableConv2D` made in model_fn then failed when called:
google/automl's EfficientDet, whose resampling layer makes a `Conv2D` in `build()`).

TF 1.x Keras convolution layers' `_convolution_op`, for TF1-style subclasses:

TF 1.x's `Conv.build` made `self._convolution_op`, a callable `(inputs, kernel) -> outputs`.
Subclasses of `tf.layers.Conv2D` (or Keras 2's `Conv2D`) that transform the kernel before
convolving (equalized learning rate, spectral normalization) override `call` and use it.
tf_keras' layers convolve with the method `convolution_op(inputs, kernel)`: `_convolution_op`
is served as that method. A layer that sets `self._convolution_op` itself keeps its own.
"""
from tpu_estimator_compat.tf1_behaviour import shapes
from tpu_estimator_compat.tf_internals import keras_and_slim


class _TF1ConvolutionOp:
    """A non-data descriptor, so that an instance attribute of that name wins."""

    def __get__(self, layer, owner=None):
        return self if layer is None else layer.convolution_op


def install():
    """Once tf_keras is imported (a program defining such a subclass, or using Keras in its
    model_fn, has imported it): TF1 layer classes in TF1 code, and `_convolution_op` for
    tf_keras' convolution layers; idempotent (the engine calls it before each model_fn)."""
    conv_base = keras_and_slim.loaded_keras_conv_base()
    if conv_base is not None:
        keras_and_slim.add_tf1_convolution_op(conv_base, _TF1ConvolutionOp())
        keras_and_slim.choose_v1_keras_classes_when(shapes.entered)
