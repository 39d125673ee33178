"""tf_keras's and tf-slim's ties to TensorFlow internals: tf_keras's seed generators and
convolution base class, and the internals tf-slim 1.1 reads that TensorFlow 2.21 moved."""
import importlib
import importlib.util
import sys
import types

from tensorflow.python.framework import indexed_slices
from tensorflow.python.framework import ops
from tensorflow.python.framework import tensor as tensor_lib
from tensorflow.python.ops import array_ops
from tensorflow.python.ops import array_ops_stack
from tensorflow.python.ops import cond as cond_lib
from tensorflow.python.ops import control_flow_assert
from tensorflow.python.ops import control_flow_case
from tensorflow.python.ops import control_flow_ops
from tensorflow.python.ops import while_loop as while_loop_lib

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
    Symbol("tf_keras.src.layers.convolutional.base_conv", "Conv.convolution_op",
           "served as TF1's `_convolution_op` (add_tf1_convolution_op)"),
    Symbol("tf_keras.src.utils.version_utils", "should_use_v2",
           "Keras layers built in TF1 code are TF1 (base_layer_v1) layers, also those a "
           "layer's build() makes under tf.init_scope() (tf1_behaviour/keras_layers.py)"),
    Symbol("tf_keras.src.engine.functional", "Functional",
           "tf.keras.estimator.model_to_estimator treats functional and Sequential models "
           "(graph networks) apart from subclassed ones (keras_estimator.py)"),
    Symbol("tf_keras.src.engine.training", "Model._compile_config",
           "tf.keras.estimator.model_to_estimator reads the losses, loss weights and metrics "
           "compile() was given, also beside a tf.train optimizer that get_compile_config() "
           "cannot serialize (keras_estimator.py)", per_instance=True),
    Symbol("tf_keras", "__internal__.optimizers.convert_to_legacy_optimizer",
           "tf.keras.estimator.model_to_estimator trains a model compiled with a (new) Keras "
           "optimizer with its legacy twin, as the original did (keras_estimator.py)"),
    Symbol("tf_keras.src.engine.node", "KerasHistory",
           "tf.keras.Input(tensor=t) in TF1 code gives t unless a Keras layer made t (it "
           "then carries its `_keras_history`) (tf1_behaviour/keras_input.py)"),
    Symbol("tf_keras.api._v1.keras.__internal__.legacy.layers", "BatchNormalization",
           "tf.layers.BatchNormalization, TF1's layer (rebuilt_apis/tf1_batch_norm.py)"),
    Symbol("tf_keras.src.layers.normalization.batch_normalization",
           "BatchNormalizationBase._moments",
           "TF1 subclasses of tf.layers.BatchNormalization override `_moments` for "
           "cross-replica statistics (rebuilt_apis/tf1_batch_norm.py)"),
    Symbol("tensorflow.python.framework.tensor", "Tensor",
           "tf.contrib.slim's constant_value, optimize_loss, learning read `ops.Tensor` "
           "(repaired by repair_tf_slim)"),
    Symbol("tensorflow.python.framework.indexed_slices", "IndexedSlices",
           "slim's optimize_loss and learning read `ops.IndexedSlices`"),
    Symbol("tensorflow.python.ops.array_ops_stack", "stack",
           "slim's streaming_concat (dynamic AUC) and layers read `array_ops.stack`"),
    Symbol("tensorflow.python.ops.array_ops_stack", "unstack",
           "slim's layers read `array_ops.unstack`"),
    Symbol("tensorflow.python.ops.control_flow_case", "case",
           "slim's tfexample_decoder.Image picks its decoder with `control_flow_ops.case`"),
    Symbol("tensorflow.python.ops.cond", "cond",
           "slim's decoders, smart_cond and streaming metrics read `control_flow_ops.cond`"),
    Symbol("tensorflow.python.ops.control_flow_assert", "Assert",
           "slim's histogram metrics read `control_flow_ops.Assert`"),
    Symbol("tensorflow.python.ops.while_loop", "while_loop",
           "slim's metric_learning losses read `control_flow_ops.while_loop`"),
)
# What tf-slim reads from TensorFlow modules that TensorFlow 2.21 moved elsewhere.
_MOVED = {
    ops: {"Tensor": tensor_lib.Tensor, "IndexedSlices": indexed_slices.IndexedSlices},
    array_ops: {"stack": array_ops_stack.stack, "unstack": array_ops_stack.unstack},
    control_flow_ops: {"case": control_flow_case.case, "cond": cond_lib.cond,
                       "Assert": control_flow_assert.Assert,
                       "while_loop": while_loop_lib.while_loop},
}


def is_graph_network(model):
    """Whether a tf_keras model is a graph network (functional, or a built Sequential),
    whose layers and input names are known before it is called."""
    functional = importlib.import_module("tf_keras.src.engine.functional").Functional
    return isinstance(model, functional) and bool(model.inputs)


def compile_arguments(model):
    """The arguments a compiled tf_keras model's `compile()` was given, as given."""
    return dict(model._compile_config.config)  # pylint: disable=protected-access


def legacy_keras_optimizer(optimizer):
    """The legacy tf_keras optimizer (one a TF1 graph applies) of a new-style one."""
    keras = importlib.import_module("tf_keras")
    return keras.__internal__.optimizers.convert_to_legacy_optimizer(optimizer)


def legacy_rnn_cells():
    """tf_keras's TF1 RNN cell module (RNNCell, LSTMStateTuple), imported when asked."""
    return importlib.import_module("tf_keras.src.layers.rnn.legacy_cells")


def loaded_keras_conv_base():
    """tf_keras's base class of every convolution layer (legacy `tf.layers.Conv2D`... and
    Keras 2's), or None when tf_keras was not imported (no such layer exists then)."""
    if "tf_keras" not in sys.modules:
        return None
    return importlib.import_module("tf_keras.src.layers.convolutional.base_conv").Conv


def add_tf1_convolution_op(conv_base, descriptor):
    """Gives the convolution layer class `conv_base` TF 1.x's `_convolution_op`, served by
    `descriptor`, unless it has one; idempotent."""
    if "_convolution_op" not in vars(conv_base):
        conv_base._convolution_op = descriptor  # pylint: disable=protected-access


def choose_v1_keras_classes_when(tf1_code):
    """tf_keras picks a layer's or model's TF1 or TF2 base class when it is constructed,
    from the context, and sets it on the class hierarchy it shares with every layer of the
    kind (`version_utils.swap_class`); makes it pick TF1 ones whenever `tf1_code()` is true,
    as TF 1.x's graph did for everything model_fn built. Idempotent."""
    version_utils = importlib.import_module("tf_keras.src.utils.version_utils")
    original = version_utils.should_use_v2
    if getattr(original, "_tpu_estimator_compat_tf1_code", None) is not None:
        return

    def should_use_v2():
        return False if tf1_code() else original()

    should_use_v2._tpu_estimator_compat_tf1_code = tf1_code
    version_utils.should_use_v2 = should_use_v2


def made_by_keras(tensor):
    """Whether a Keras layer (or `Input`) made `tensor` (it records its history then)."""
    return hasattr(tensor, "_keras_history")


def legacy_tf_layers():
    """tf_keras's TF1 `tf.layers` module (`tf.compat.v1.layers`' classes)."""
    return importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")


def defined_moments(layer_class):
    """The `_moments` method `layer_class` itself defines (a batch normalization
    subclass's override of its statistics), or None."""
    return vars(layer_class).get("_moments")


def keras_seed_generators():
    """tf_keras's thread-local seed generators, or None (tf_keras not installed, or changed)."""
    try:
        backend = importlib.import_module("tf_keras.src.backend")
    except ImportError:
        return None
    return getattr(backend, "_SEED_GENERATOR", None)


class _ModuleWith(types.ModuleType):
    """A TensorFlow module, plus names TensorFlow 2.21 moved out of it."""

    def __init__(self, module, moved):
        super().__init__(module.__name__, module.__doc__)
        self._module = module
        for name, value in moved.items():
            setattr(self, name, value)

    def __getattr__(self, name):
        return getattr(self._module, name)


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
    """After `import tf_slim` (and its submodules): tf-slim's modules that read names
    TensorFlow 2.21 moved (`ops.Tensor`, `ops.IndexedSlices`, `array_ops.stack` / `unstack`,
    `control_flow_ops.case` / `cond` / `Assert` / `while_loop`) get views of those modules
    that have them. Idempotent."""
    views = {}
    for module, names in _MOVED.items():
        moved = {name: value for name, value in names.items() if not hasattr(module, name)}
        if moved:
            views[module] = _ModuleWith(module, moved)
    for name, module in list(sys.modules.items()):
        if name == "tf_slim" or name.startswith("tf_slim."):
            for attribute, value in list(vars(module).items()):
                if isinstance(value, types.ModuleType) and value in views:
                    setattr(module, attribute, views[value])
