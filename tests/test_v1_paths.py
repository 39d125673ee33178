"""TF1 module paths under `tpu_estimator_compat.v1` (`_paths`, `_finder`), tf-slim as
`contrib.slim` / `metrics` / `framework` / more `layers`, `HParams`, AsyncCheckpointSaverHook."""
import importlib
import inspect
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_slim

import tpu_estimator_compat as tec
import tpu_estimator_compat.v1 as v1
import helpers
from helpers import make_estimator
from tpu_estimator_compat.v1 import _lazy
from tpu_estimator_compat.v1 import _paths
from tpu_estimator_compat.rebuilt_apis.hparam import HParams


def _exec(statement):
    """Runs an import statement of a TF1 program, rewritten mechanically; returns its names."""
    names = {}
    exec(statement.replace("tensorflow", "tpu_estimator_compat.v1"), names)  # noqa: S102
    names.pop("__builtins__")
    return names


# Module paths -------------------------------------------------------------------------------

@pytest.mark.parametrize("statement, name, expected", [
    ("from tensorflow.python.estimator import estimator", "estimator.Estimator", tec.Estimator),
    ("from tensorflow.python.estimator import model_fn as m", "m.EstimatorSpec", tec.EstimatorSpec),
    ("from tensorflow.python.estimator import run_config", "run_config.RunConfig", tec.RunConfig),
    ("from tensorflow.python.estimator import training", "training.TrainSpec", tec.TrainSpec),
    ("from tensorflow.python.estimator.export import export",
     "export.ServingInputReceiver", "tpu_estimator_compat.export.receivers:ServingInputReceiver"),
    ("from tensorflow.contrib.tpu.python.tpu import tpu_estimator",
     "tpu_estimator.TPUEstimator", tec.TPUEstimator),
    ("from tensorflow.contrib.tpu.python.tpu.tpu_estimator import export_estimator_savedmodel",
     "export_estimator_savedmodel", "tpu_estimator_compat.estimator:export_estimator_savedmodel"),
    ("from tensorflow.contrib.tpu.python.tpu import tpu_config", "tpu_config.TPUConfig",
     tec.TPUConfig),
    ("from tensorflow.contrib.tpu.python.tpu import tpu_optimizer",
     "tpu_optimizer.CrossShardOptimizer", tec.CrossShardOptimizer),
    ("from tensorflow.contrib.tpu.python.tpu import tpu_function",
     "tpu_function.get_tpu_context", "tensorflow.python.tpu.tpu_function:get_tpu_context"),
    ("from tensorflow.contrib.tpu.python.tpu import bfloat16", "bfloat16.bfloat16_scope",
     "tensorflow:compat.v1.tpu.bfloat16_scope"),
    ("from tensorflow.contrib.tpu.python.tpu import async_checkpoint",
     "async_checkpoint.AsyncCheckpointSaverHook", "tensorflow:compat.v1.train.CheckpointSaverHook"),
    ("from tensorflow.contrib.training.python.training import evaluation",
     "evaluation.checkpoints_iterator", "tensorflow:compat.v1.train.checkpoints_iterator"),
    ("from tensorflow.contrib import slim", "slim.arg_scope", tf_slim.arg_scope),
    ("import tensorflow.contrib.slim as slim", "slim.conv2d", tf_slim.conv2d),
    ("from tensorflow.contrib.slim.nets import resnet_v1", "resnet_v1.resnet_v1_50",
     "tf_slim.nets.resnet_v1:resnet_v1_50"),
    ("from tensorflow.contrib.slim import parallel_reader", "parallel_reader.parallel_read",
     "tf_slim.data.parallel_reader:parallel_read"),
    ("from tensorflow.contrib.framework import arg_scope, add_arg_scope", "add_arg_scope",
     tf_slim.add_arg_scope),
    ("from tensorflow.contrib.framework import assign_from_checkpoint_fn",
     "assign_from_checkpoint_fn", tf_slim.assign_from_checkpoint_fn),
    ("from tensorflow.contrib.metrics import streaming_mean", "streaming_mean",
     "tf_slim.metrics:streaming_mean"),
    ("from tensorflow.contrib.training import HParams, wait_for_new_checkpoint",
     "wait_for_new_checkpoint", "tensorflow.python.training.checkpoint_utils:wait_for_new_checkpoint"),
    ("from tensorflow.contrib.layers import softmax", "softmax", "tf_slim.layers:softmax"),
    ("from tensorflow.compat.v1 import estimator as tf_estimator", "tf_estimator.tpu.TPUEstimator",
     tec.TPUEstimator),
    ("import tensorflow.compat.v1 as tf", "tf.estimator.tpu.RunConfig", tec.RunConfig),
    ("from tensorflow.python.estimator.tpu import tpu_estimator", "tpu_estimator.TPUEstimatorSpec",
     "tpu_estimator_compat.api.spec:TPUEstimatorSpec"),
    ("from tensorflow.contrib import stateless", "stateless.stateless_random_normal",
     "tensorflow:random.stateless_normal"),
    ("from tensorflow.contrib import distribute", "distribute.AllReduceCrossDeviceOps",
     "tensorflow.python.distribute.cross_device_ops:AllReduceCrossDeviceOps"),
    ("from tensorflow.contrib import distribute", "distribute.MirroredStrategy",
     "tensorflow:compat.v1.distribute.MirroredStrategy"),
    ("from tensorflow.python.ops import array_ops", "array_ops.concat",
     "tensorflow.python.ops.array_ops:concat"),
    ("from tensorflow.contrib.framework import list_variables", "list_variables",
     "tensorflow:compat.v1.train.list_variables"),
    ("from tensorflow.python.ops import variable_scope", "variable_scope.variable",
     "tensorflow:compat.v1.Variable"),
    ("from tensorflow.python.ops import variable_scope", "variable_scope.get_variable",
     "tensorflow.python.ops.variable_scope:get_variable"),
])
def test_tf1_import_statements_rewritten_mechanically(statement, name, expected):
    names = _exec(statement)
    first, *rest = name.split(".")
    value = names[first]
    for part in rest:
        value = getattr(value, part)
    if isinstance(expected, str):
        expected = _lazy.resolve(expected)
    if name == "async_checkpoint.AsyncCheckpointSaverHook":
        assert issubclass(value, expected)  # a CheckpointSaverHook: the engine's saver drives it
    else:
        assert value is expected


def test_every_listed_path_serves_its_names():
    for path, entry in _paths.MODULES.items():
        module = importlib.import_module(f"tpu_estimator_compat.v1.{path}")
        assert sys.modules[f"tpu_estimator_compat.v1.{path}"] is module
        if isinstance(entry, _paths.Virtual):
            assert module.__name__ == f"tpu_estimator_compat.v1.{path}"
            for name, spec in entry.names.items():
                assert getattr(module, name) is _lazy.resolve(spec), (path, name)
            for name, child in _paths.children(path).items():  # entries win over the fallback
                if name not in entry.names:  # names win over entries (TF1's star imports)
                    assert getattr(module, name) is sys.modules[f"tpu_estimator_compat.v1.{child}"]
        else:
            assert module is _lazy.resolve(entry)
            assert not _paths.children(path), f"alias {path} must not have entries below it"
    import tpu_estimator_compat.v1.contrib.slim.python.slim.nets.vgg as vgg  # noqa: PLC0415
    assert vgg is tf_slim.nets.vgg and not hasattr(tf_slim, "python")


def _import_every_module_of_the_namespace():
    """Imports every module of `tpu_estimator_compat.v1`: its files and `_paths`' paths."""
    root = pathlib.Path(v1.__file__).parent
    for file in sorted(root.rglob("*.py")):
        parts = [part for part in file.relative_to(root).with_suffix("").parts
                 if part != "__init__"]
        importlib.import_module(".".join(["tpu_estimator_compat.v1", *parts]))
    for path in _paths.MODULES:
        importlib.import_module(f"tpu_estimator_compat.v1.{path}")


def test_every_name_every_lazy_table_lists_resolves():
    _import_every_module_of_the_namespace()
    tables = dict(_lazy.TABLES)
    assert {"tpu_estimator_compat.v1", "tpu_estimator_compat.v1.contrib.tpu",
            "tpu_estimator_compat.v1.python.estimator.tpu.tpu_estimator"} <= set(tables)
    unresolved = []
    for module_name, (names, fallback) in tables.items():
        module = sys.modules[module_name]
        for name, spec in names.items():
            try:
                assert getattr(module, name) is _lazy.resolve(spec)
            except (ImportError, AttributeError, RecursionError) as error:
                unresolved.append(f"{module_name}.{name} = {spec!r}: {error!r}")
        if fallback is not None and not inspect.ismodule(_lazy.resolve(fallback)):
            unresolved.append(f"{module_name} falls back to {fallback!r}, not a module")
    assert not unresolved
    # contrib's submodules are all served.
    assert all(inspect.ismodule(getattr(v1.contrib, name)) for name in v1.contrib.SUBMODULES)

def test_a_package_star_importing_a_submodule_serves_the_function_the_path_the_module():
    # TF 1.x: contrib/framework/python/ops/__init__.py star-imports its `arg_scope` module,
    # whose `arg_scope` function then replaces the submodule as the package's attribute.
    names = _exec("from tensorflow.contrib.framework.python.ops import arg_scope, variables")
    assert names["arg_scope"] is tf_slim.arg_scope
    assert inspect.ismodule(names["variables"])  # no name `variables` in its star import
    module = _exec("import tensorflow.contrib.framework.python.ops.arg_scope as m")["m"]
    assert module is tf_slim.arg_scope  # attribute access after import, as on Python 3.7+
    assert importlib.import_module(
        "tpu_estimator_compat.v1.contrib.framework.python.ops.arg_scope").arg_scope is \
        tf_slim.arg_scope  # the import path names the module
    ops = sys.modules["tpu_estimator_compat.v1.contrib.framework.python.ops"]
    assert ops.arg_scope is tf_slim.arg_scope  # the import did not replace the name
    with names["arg_scope"]([tf_slim.conv2d], padding="VALID"):
        assert tf_slim.current_arg_scope()  # callable, as the slim nets' arg_scope fns use it


def test_tensorflow_modules_are_served_not_copied():
    from tpu_estimator_compat.v1.python.ops import math_ops  # noqa: PLC0415
    from tpu_estimator_compat.v1.python.framework import dtypes  # noqa: PLC0415
    from tpu_estimator_compat.v1.core.protobuf import config_pb2  # noqa: PLC0415
    import tensorflow.python.framework.dtypes as real_dtypes  # noqa: PLC0415
    import tensorflow.python.ops.math_ops as real_math_ops  # noqa: PLC0415

    assert math_ops is real_math_ops and dtypes is real_dtypes
    assert config_pb2.ConfigProto is tf.compat.v1.ConfigProto
    assert math_ops.__spec__.name == "tensorflow.python.ops.math_ops"  # kept its own spec
    assert not [m for m in sys.modules.values()
                if getattr(m, "__file__", None) == real_math_ops.__file__ and m is not math_ops]


def test_tf1_names_tensorflow_moved_are_served_where_tf1_had_them():
    from tpu_estimator_compat.v1.python.framework import ops  # noqa: PLC0415
    from tpu_estimator_compat.v1.python.ops import array_ops, control_flow_ops  # noqa: PLC0415
    real_ops = importlib.import_module("tensorflow.python.framework.ops")
    real_array_ops = importlib.import_module("tensorflow.python.ops.array_ops")

    assert isinstance(tf.constant(1.0), ops.Tensor)
    assert ops.get_default_graph is real_ops.get_default_graph  # the rest is TensorFlow's
    assert array_ops.reshape is real_array_ops.reshape
    assert array_ops.stack([1, 2]).numpy().tolist() == [1, 2]
    assert control_flow_ops.cond(tf.constant(False), lambda: 1, lambda: 2) == 2  # eager: the branch
    assert control_flow_ops.while_loop(lambda i: i < 3, lambda i: i + 1, [0]).numpy() == 3


@pytest.mark.parametrize("path", ["contrib.quantize", "python.estimator.canned.head",
                                  "contrib.tpu.python.tpu.keras_support", "train.no_such_module"])
def test_paths_not_served_raise_module_not_found(path):
    with pytest.raises(ModuleNotFoundError, match=f"tpu_estimator_compat.v1.{path}"):
        importlib.import_module(f"tpu_estimator_compat.v1.{path}")


# tf-slim ------------------------------------------------------------------------------------

X = np.random.RandomState(3).rand(64, 5).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5], [0.0], [1.5]], np.float32)).astype(np.float32)
W1 = np.random.RandomState(4).randn(5, 4).astype(np.float32) * 0.5
W2 = np.random.RandomState(5).randn(4, 1).astype(np.float32) * 0.5
BATCH, STEPS = 16, 6


def slim_net(features, is_training):
    slim = v1.contrib.slim
    with slim.arg_scope([slim.fully_connected], weights_regularizer=slim.l2_regularizer(0.01)):
        net = slim.fully_connected(features, 4, weights_initializer=v1.constant_initializer(W1),
                                   normalizer_fn=slim.batch_norm,
                                   normalizer_params={"is_training": is_training, "decay": 0.9})
        return slim.fully_connected(net, 1, activation_fn=None,
                                    weights_initializer=v1.constant_initializer(W2))


def slim_loss(features, labels, is_training):
    predictions = slim_net(features, is_training)
    return predictions, v1.losses.mean_squared_error(labels, predictions) + \
        v1.losses.get_regularization_loss()


def slim_model_fn(features, labels, mode, params):
    predictions, loss = slim_loss(features, labels, mode == v1.estimator.ModeKeys.TRAIN)
    with v1.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
        train_op = v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=v1.train.get_global_step())

    def metric_fn(labels, predictions):
        return {"mean_prediction": v1.contrib.metrics.streaming_mean(predictions),
                "mae": v1.contrib.metrics.streaming_mean_absolute_error(predictions, labels)}
    return v1.contrib.tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                                           eval_metrics=(metric_fn, [labels, predictions]))


def slim_input_fn(params):
    dataset = v1.data.Dataset.from_tensor_slices((X, Y))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def graph_reference():
    """The same slim model trained STEPS steps in a TF1 graph with a Session."""
    with tf.Graph().as_default():
        features = v1.placeholder(tf.float32, [BATCH, 5])
        labels = v1.placeholder(tf.float32, [BATCH, 1])
        global_step = v1.train.get_or_create_global_step()
        _, loss = slim_loss(features, labels, True)
        with v1.control_dependencies(v1.get_collection(v1.GraphKeys.UPDATE_OPS)):
            train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step)
        names = [v.op.name for v in v1.global_variables()]
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            for step in range(STEPS):
                rows = slice(step * BATCH % 64, step * BATCH % 64 + BATCH)
                session.run(train_op, {features: X[rows], labels: Y[rows]})
            return dict(zip(names, session.run(v1.global_variables())))


@pytest.mark.slow  # trains or evaluates for several seconds
def test_slim_model_in_tpu_estimator_equals_the_tf1_graph(tmp_path):
    estimator = v1.contrib.tpu.TPUEstimator(
        model_fn=slim_model_fn, use_tpu=False, train_batch_size=BATCH, eval_batch_size=BATCH,
        config=v1.contrib.tpu.RunConfig(
            model_dir=str(tmp_path), tpu_config=v1.contrib.tpu.TPUConfig(iterations_per_loop=2)))
    estimator.train(slim_input_fn, max_steps=STEPS)
    expected = graph_reference()
    assert sorted(expected) == sorted(estimator.get_variable_names())
    assert sorted(expected) == [
        "fully_connected/BatchNorm/beta", "fully_connected/BatchNorm/moving_mean",
        "fully_connected/BatchNorm/moving_variance", "fully_connected/weights",
        "fully_connected_1/biases", "fully_connected_1/weights", "global_step"]
    for name, value in expected.items():
        np.testing.assert_allclose(estimator.get_variable_value(name), value, rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    assert np.abs(expected["fully_connected/BatchNorm/moving_mean"]).sum() > 0
    from tpu_estimator_compat.v1.python.estimator import estimator as estimator_lib  # noqa
    assert estimator_lib._load_global_step_from_checkpoint_dir(str(tmp_path)) == STEPS
    assert estimator_lib._load_global_step_from_checkpoint_dir(str(tmp_path / "none")) == 0
    metrics = estimator.evaluate(slim_input_fn, steps=4)
    assert metrics["global_step"] == STEPS
    assert metrics["mae"] > 0 and np.isfinite(metrics["mean_prediction"])


def _streaming_total(values, name):
    """A TF1 program's own streaming metric (BERT-NER's metrics.py does this): a local
    ON_READ / SUM variable made by TF 1.x's internal `variable_scope.variable`."""
    from tpu_estimator_compat.v1.python.ops import variable_scope  # noqa: PLC0415
    total = variable_scope.variable(
        lambda: tf.zeros([], tf.float32), trainable=False,
        collections=[v1.GraphKeys.LOCAL_VARIABLES, v1.GraphKeys.METRIC_VARIABLES],
        validate_shape=True, synchronization=v1.VariableSynchronization.ON_READ,
        aggregation=v1.VariableAggregation.SUM, name=name)
    return tf.identity(total), v1.assign_add(total, tf.reduce_sum(values))


def _label_total_model_fn(features, labels, mode, params):
    weights = v1.get_variable("w", [5, 1], initializer=v1.zeros_initializer())
    loss = v1.losses.mean_squared_error(labels, tf.matmul(features, weights))
    if mode == tec.ModeKeys.EVAL:
        return tec.TPUEstimatorSpec(mode, loss=loss, eval_metrics=(
            lambda labels: {"label_total": _streaming_total(labels, "label_total")}, [labels]))
    return helpers.sgd_spec(mode, loss)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_metric_on_variable_scope_variable_evaluates_on_one_and_eight_replicas(
        tmp_path, one_device, eight_devices):
    for name, strategy in (("one", one_device), ("eight", eight_devices)):
        estimator = make_estimator(tmp_path / name, strategy, _label_total_model_fn,
                                   batch_size=BATCH)
        estimator.train(slim_input_fn, steps=1)
        metrics = estimator.evaluate(slim_input_fn, steps=3)
        np.testing.assert_allclose(metrics["label_total"], Y[:3 * BATCH].sum(), rtol=1e-5,
                                   err_msg=name)


# A program migrated by its import lines that imports tf-slim itself (BLEURT's `from tf_slim
# import metrics`), after the namespace (argv[2] == "after") or before it.
_DIRECT_TF_SLIM_PROGRAM = """
import json, sys
import numpy as np
if sys.argv[2] == "before":
    import tf_slim as slim
    from tf_slim import metrics
tf = __import__(sys.argv[1], fromlist=["compat"])
if sys.argv[2] == "after":
    assert "tf_slim" not in sys.modules, "the namespace imported tf-slim"
    import tf_slim as slim
    from tf_slim import metrics
v1 = tf.compat.v1
x = np.arange(12, dtype=np.float32).reshape(4, 3) ** 1.5
with v1.Graph().as_default():
    values = v1.placeholder(v1.float32, [None])
    concat, update = metrics.streaming_concat(values)
    normalized = slim.batch_norm(v1.constant(x), is_training=True)
    contrib_normalized = v1.contrib.slim.batch_norm(v1.constant(x), is_training=True)
    with v1.Session() as session:
        session.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
        for batch in ([1.0, 2.0], [3.0], [4.0, 5.0, 6.0]):
            session.run(update, {values: batch})
        results = session.run([concat, normalized, contrib_normalized])
print(json.dumps([result.tolist() for result in results]))
"""


@pytest.mark.slow  # starts a Python process
@pytest.mark.parametrize("namespace, imported", [("tpu_estimator_compat.v1", "after"),
                                                 ("tpu_estimator_compat.v2", "before")])
def test_tf_slim_imported_directly_is_repaired_as_contrib_slim(namespace, imported):
    """tf-slim's streaming_concat reads `control_flow_ops.cond`, which TensorFlow 2.21 moved
    (AttributeError on plain tf-slim 1.1): imported beside the namespace, before or after it,
    tf-slim is repaired; it concatenates the batches it saw, and its batch_norm normalizes as
    `contrib.slim`'s does."""
    root = str(pathlib.Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [root, os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", _DIRECT_TF_SLIM_PROGRAM, namespace, imported],
                            capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    concat, normalized, contrib_normalized = json.loads(result.stdout.splitlines()[-1])
    assert concat == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    x = np.arange(12, dtype=np.float32).reshape(4, 3) ** 1.5
    expected = (x - x.mean(axis=0)) / np.sqrt(x.var(axis=0) + 0.001)  # slim's epsilon
    np.testing.assert_allclose(normalized, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(normalized, contrib_normalized, rtol=1e-6)


def test_contrib_layers_take_arg_scope_and_fall_back_to_tf_slim():
    layers = v1.contrib.layers
    with tf.Graph().as_default():
        with v1.contrib.framework.arg_scope([layers.fully_connected], activation_fn=None,
                                            biases_initializer=None):
            out = layers.fully_connected(v1.ones([2, 3]), 4)
        assert [v.op.name for v in v1.global_variables()] == ["fully_connected/weights"]
        assert out.op.type == "MatMul"  # no bias, no activation: the scope's defaults applied
    assert layers.softmax is tf_slim.layers.softmax
    assert layers.fully_connected.__module__ == "tpu_estimator_compat.rebuilt_apis.contrib_layers"


# HParams ------------------------------------------------------------------------------------

def test_hparams_parse_types_and_serialisation():
    hparams = HParams(learning_rate=0.1, num_layers=2, activation="relu", use_bias=True,
                      sizes=[4, 8])
    assert hparams.parse("learning_rate=1,num_layers=3, activation=tanh,use_bias=false,"
                         "sizes=[1,2,3]") is hparams
    assert hparams.values() == {"learning_rate": 1.0, "num_layers": 3, "activation": "tanh",
                                "use_bias": False, "sizes": [1, 2, 3]}
    assert isinstance(hparams.learning_rate, float)
    assert json.loads(hparams.to_json()) == hparams.values()
    assert hparams.to_json(sort_keys=True).startswith('{"activation": "tanh"')
    hparams.parse_json('{"num_layers": 5}')
    hparams.override_from_dict({"sizes": [7]})
    assert (hparams.num_layers, hparams.sizes) == (5, [7])
    hparams.add_hparam("dropout", 0.5)
    assert "dropout" in hparams and "nothing" not in hparams
    assert hparams.get("dropout") == 0.5 and hparams.get("nothing", 3) == 3
    hparams.del_hparam("dropout")
    assert "dropout" not in hparams and not hasattr(hparams, "dropout")
    assert str(HParams(b=1, a="x")) == "[('a', 'x'), ('b', 1)]"
    assert repr(HParams(a=1)) == "HParams([('a', 1)])"
    assert HParams(model_structure="net").get_model_structure() == "net"


@pytest.mark.parametrize("call, message", [
    (lambda h: h.parse("num_layers=2.5"),
     "Could not parse hparam 'num_layers' of type 'int' with value '2.5' in num_layers=2.5"),
    (lambda h: h.parse("unknown=1"), "Unknown hyperparameter type for unknown"),
    (lambda h: h.parse("num_layers=1,num_layers=2"),
     "Multiple assignments to variable 'num_layers' in num_layers=1,num_layers=2"),
    (lambda h: h.parse("num_layers"), "Malformed hyperparameter value: num_layers"),
    (lambda h: h.parse("sizes=3"), "Must pass a list for multi-valued parameter: sizes."),
    (lambda h: h.parse("num_layers=[1]"),
     "Must not pass a list for single-valued parameter: num_layers"),
    (lambda h: h.set_hparam("num_layers", 1.5),
     "Could not cast hparam 'num_layers' of type '<class 'int'>' from value 1.5"),
    (lambda h: h.set_hparam("activation", 3),
     "Could not cast hparam 'activation' of type '<class 'str'>' from value 3"),
    (lambda h: h.add_hparam("parse", 1), "Hyperparameter name is reserved: parse"),
    (lambda h: h.add_hparam("empty", []), "Multi-valued hyperparameters cannot be empty: empty"),
    (lambda h: h.get("num_layers", "x"),
     "Hparam 'num_layers' of type '<class 'int'>' is incompatible with default=x"),
])
def test_hparams_errors_name_the_cause(call, message):
    hparams = HParams(num_layers=2, activation="relu", sizes=[4, 8])
    with pytest.raises(ValueError) as error:
        call(hparams)
    assert str(error.value).startswith(message)


def test_hparams_reject_the_proto_form():
    with pytest.raises(NotImplementedError, match="HParamDef protocol buffer is not supported"):
        HParams(hparam_def=object())


# AsyncCheckpointSaverHook -------------------------------------------------------------------

def _ckpt_steps(directory):
    state = tf.train.get_checkpoint_state(str(directory))
    return sorted(int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths)


class _Listener(v1.train.CheckpointSaverListener):
    def __init__(self):
        self.saved = []

    def after_save(self, session, global_step_value):
        self.saved.append(global_step_value)


def test_async_checkpoint_saver_hook_saves_on_the_estimators_schedule(tmp_path):
    hook_types = {"async": v1.contrib.tpu.AsyncCheckpointSaverHook,
                  "sync": v1.train.CheckpointSaverHook}
    saved = {}
    for kind, hook_type in hook_types.items():
        model_dir, hook_dir = tmp_path / kind, tmp_path / f"{kind}_hook"
        listener = _Listener()
        estimator = v1.contrib.tpu.TPUEstimator(
            model_fn=slim_model_fn, use_tpu=False, train_batch_size=BATCH,
            config=v1.contrib.tpu.RunConfig(
                model_dir=str(model_dir), save_checkpoints_steps=1,
                tpu_config=v1.contrib.tpu.TPUConfig(iterations_per_loop=2)))
        estimator.train(slim_input_fn, max_steps=10, hooks=[hook_type(
            str(hook_dir), save_steps=4, listeners=[listener])])
        saved[kind] = (_ckpt_steps(hook_dir), listener.saved)
    assert saved["async"] == saved["sync"] == ([0, 4, 8, 10], [0, 4, 8, 10])


def test_tf1_eager_profiler_profiles_and_saves_for_tensorboard(tmp_path):
    # TF 1.15's module, which TensorFlow 2.15 (the original) still had and 2.21 has not; file
    # layout and messages as 2.15's.
    profiler = _exec("from tensorflow.python.eager import profiler")["profiler"]
    profiler.start()
    with pytest.raises(profiler.ProfilerAlreadyRunningError, match="Another profiler"):
        profiler.start()
    tf.reduce_sum(tf.ones([8, 8]))
    result = profiler.stop()
    with pytest.raises(profiler.ProfilerNotRunningError, match="No profiler is running"):
        profiler.stop()
    profiler.save(str(tmp_path / "a"), result)
    with profiler.Profiler(str(tmp_path / "b")):
        tf.reduce_sum(tf.ones([8, 8]))
    for logdir in ("a", "b"):
        assert len(list((tmp_path / logdir).glob("events*.profile-empty"))) == 1
        assert len(list((tmp_path / logdir).glob("plugins/profile/*/local.trace"))) == 1
    assert next((tmp_path / "a").glob("plugins/profile/*/local.trace")).read_bytes() == result
    assert next((tmp_path / "b").glob("plugins/profile/*/local.trace")).stat().st_size > 0
