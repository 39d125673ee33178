"""`tf.keras.Input(tensor=t)` (`tf.keras.layers.Input`) in TF1 code gives `t`, as TF 1.x's
graph-mode Keras did.

TF1 programs feed a graph tensor into Keras layers inside model_fn through
`tf.keras.layers.Input(tensor=net)`; TF 1.x returned that tensor (marked as a Keras input),
so the layers called on it computed on it. tf_keras turns it into a symbolic `KerasTensor`,
on which the v1 layers cannot compute inside a trace (a RecursionError in `TFOpLambda`). In
TF1 code (`shapes.building_tf1_code()`) a graph tensor passed as `tensor=` is returned as
given; anywhere else, and for every other use of `Input`, tf_keras' own is called.
"""
import functools
import inspect

import tensorflow as tf
from tf_keras.api._v1 import keras as _keras

from tpu_estimator_compat.tf1_behaviour import shapes
from tpu_estimator_compat.tf_internals import keras_and_slim

_SIGNATURE = inspect.signature(_keras.Input)


@functools.wraps(_keras.Input)
def Input(*args, **kwargs):  # noqa: N802  (Keras' public name)
    tensor = _SIGNATURE.bind_partial(*args, **kwargs).arguments.get("tensor")
    if (isinstance(tensor, tf.Tensor) and not keras_and_slim.made_by_keras(tensor)
            and shapes.building_tf1_code()):
        return tensor
    return _keras.Input(*args, **kwargs)
