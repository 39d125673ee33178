"""tf_keras's and tf-slim's ties to TensorFlow internals: tf_keras's seed generators and
convolution base class, and the two internals tf-slim 1.1 reads that TensorFlow 2.21 moved."""
import importlib
import importlib.util
import sys
import types

from tensorflow.python.framework import ops
from tensorflow.python.framework import tensor as tensor_lib

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

SYMBOLS = uses(
    Symbol("tf_keras.src.backend", "_SEED_GENERATOR",
           "RunConfig(tf_random_seed=...) makes tf_keras legacy layers' initial values "
           "repeatable (engine/model_bridge.py)"),
    Symbol("tensorflow.python.layers.normalization", "",
           "tf.contrib.slim's batch_norm builds its layer (repaired by repair_tf_slim)"),
    Symbol("tf_keras.src.legacy_tf_layers.normalization", "",
           "tf.contrib.slim's batch_norm builds its layer (repaired by repair_tf_slim)"),
    Symbol("tf_keras.src.layers.rnn.legacy_cells", "RNNCell",
           "tf.contrib.rnn's LayerNormBasicLSTMCell is a TF1 RNNCell (rebuilt_apis/contrib_rnn.py)"),
    Symbol("tf_keras.src.layers.rnn.legacy_cells", "LSTMStateTuple",
           "tf.contrib.rnn's LayerNormBasicLSTMCell returns TF1 LSTM states"),
    Symbol("tf_keras.src.layers.convolutional.base_conv", "Conv",
           "TF1-style subclasses of tf.layers.Conv2D... call `self._convolution_op` "
           "(tf1_behaviour/patches.py)"),
    Symbol("tensorflow.python.framework.tensor", "Tensor",
           "tf.contrib.slim's constant_value, optimize_loss, learning read `ops.Tensor` "
           "(repaired by repair_tf_slim)"),
)


def legacy_rnn_cells():
    """tf_keras's TF1 RNN cell module (RNNCell, LSTMStateTuple), imported when asked."""
    return importlib.import_module("tf_keras.src.layers.rnn.legacy_cells")


def loaded_keras_conv_base():
    """tf_keras's base class of every convolution layer (legacy `tf.layers.Conv2D`... and
    Keras 2's), or None when tf_keras was not imported (no such layer exists then)."""
    if "tf_keras" not in sys.modules:
        return None
    return importlib.import_module("tf_keras.src.layers.convolutional.base_conv").Conv


def keras_seed_generators():
    """tf_keras's thread-local seed generators, or None (tf_keras not installed, or changed)."""
    try:
        backend = importlib.import_module("tf_keras.src.backend")
    except ImportError:
        return None
    return getattr(backend, "_SEED_GENERATOR", None)


class _OpsWithTensor(types.ModuleType):
    """TensorFlow's `framework.ops`, plus `Tensor`."""

    def __init__(self):
        super().__init__(ops.__name__, ops.__doc__)
        self.Tensor = tensor_lib.Tensor  # pylint: disable=invalid-name

    def __getattr__(self, name):
        return getattr(ops, name)


def repair_tf_slim_imports():
    """Before `import tf_slim`: TensorFlow's `layers.normalization` loads
    `tf_keras.legacy_tf_layers.normalization`, a path tf_keras no longer has (the module is
    `tf_keras.src.legacy_tf_layers.normalization`); it is pointed there when the old path is
    missing. Idempotent."""
    normalization = importlib.import_module("tensorflow.python.layers.normalization")
    if importlib.util.find_spec("tf_keras.legacy_tf_layers") is None:
        normalization.normalization = importlib.import_module(
            "tf_keras.src.legacy_tf_layers.normalization")


def repair_tf_slim_modules():
    """After `import tf_slim` (and its submodules): tf-slim's modules that read
    `ops.Tensor` (now `framework.tensor.Tensor`) get a view of `ops` that has it."""
    if hasattr(ops, "Tensor"):
        return
    view = _OpsWithTensor()
    for name, module in list(sys.modules.items()):
        if name == "tf_slim" or name.startswith("tf_slim."):
            for attribute, value in list(vars(module).items()):
                if value is ops:
                    setattr(module, attribute, view)
