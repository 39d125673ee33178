"""`import tpu_estimator_compat.v1 as tf`: delegation, overrides, TF1 shapes, TPUClusterResolver."""
import copy
import importlib
import json
import os
import socket
import subprocess
import sys
import threading
import time

import absl.flags
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import tensor_shape

import tpu_estimator_compat
import tpu_estimator_compat.v1 as v1
from tpu_estimator_compat.engine import cluster_resolver
from tpu_estimator_compat.tf1_behaviour import shapes as _shapes
from tpu_estimator_compat.tf1_behaviour.shapes import tf1_shapes

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(tpu_estimator_compat.__file__)))


def _run_fresh(code):
    """Runs `code` in a new Python process (a fresh TensorFlow); returns its last stdout line."""
    env = dict(os.environ, PYTHONPATH=_REPO, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


# Importing the namespace --------------------------------------------------------------------

@pytest.mark.slow  # starts processes
def test_import_is_lazy_and_leaves_keras_3_as_tf_keras():
    facts = json.loads(_run_fresh(
        "import json, sys\n"
        "import tpu_estimator_compat.v1 as tf\n"
        "loaded = sorted(m for m in sys.modules\n"
        "                if m.startswith(('tpu_estimator_compat', 'tf_keras')))\n"
        "dense = tf.layers.dense\n"
        "import tensorflow\n"
        "print(json.dumps({'loaded': loaded, 'dense': dense.__module__,\n"
        "                  'tf_keras_dense': tensorflow.keras.layers.Dense.__module__}))\n"))
    # log: TensorFlow's handler prints each line once (also before any estimator exists);
    # rebuilt_apis.tf_slim_import_hook: the finder that repairs tf-slim if the program imports
    # it (it does not import tf-slim itself)
    assert facts["loaded"] == ["tpu_estimator_compat", "tpu_estimator_compat.log",
                               "tpu_estimator_compat.rebuilt_apis",
                               "tpu_estimator_compat.rebuilt_apis.tf_slim_import_hook",
                               "tpu_estimator_compat.tf1_behaviour",
                               "tpu_estimator_compat.tf1_behaviour.keras_layers",
                               "tpu_estimator_compat.tf1_behaviour.process_patches",
                               "tpu_estimator_compat.tf1_behaviour.shapes",
                               "tpu_estimator_compat.tf1_behaviour.variables",
                               "tpu_estimator_compat.tf_internals",
                               "tpu_estimator_compat.tf_internals._symbols",
                               "tpu_estimator_compat.tf_internals.keras_and_slim",
                               "tpu_estimator_compat.tf_internals.tensors",
                               "tpu_estimator_compat.v1", "tpu_estimator_compat.v1._finder",
                               "tpu_estimator_compat.v1._lazy", "tpu_estimator_compat.v1._paths"]
    assert facts["dense"].startswith("tf_keras.")
    assert facts["tf_keras_dense"].startswith("keras.")  # tf.keras is still Keras 3.


@pytest.mark.slow  # starts processes
def test_tf1_main_with_app_run_flags_and_global_graph_mode():
    out = _run_fresh(
        "import tpu_estimator_compat.v1 as tf\n"
        "tf.flags.DEFINE_integer('hidden', 1, 'Units.')\n"
        "FLAGS = tf.flags.FLAGS\n"
        "def main(argv):\n"
        "    tf.disable_eager_execution()\n"
        "    x = tf.placeholder(tf.float32, [None, FLAGS.hidden])\n"
        "    print(x.shape[-1].value, x.shape[0].value, argv[1:])\n"
        "tf.app.run(main, argv=['prog', '--hidden=7', 'extra'])\n")
    assert out == "7 None ['extra']"


def test_flags_module_defines_on_absl_flags():
    v1.flags.DEFINE_string("tpu_estimator_compat_test_flag", "a", "Test flag.")
    flag = absl.flags.FLAGS["tpu_estimator_compat_test_flag"]
    assert flag.default == "a"
    assert v1.flags.FLAGS["tpu_estimator_compat_test_flag"] is flag  # TF's wrapper of absl's


# Delegation to tf.compat.v1 at access time ---------------------------------------------------

def test_names_resolve_at_access_time(monkeypatch):
    """The engine patches tf.compat.v1.train.init_from_checkpoint while model_fn is traced."""
    patched = object()
    monkeypatch.setattr(tf.compat.v1.train, "init_from_checkpoint", patched)
    monkeypatch.setattr(tf.compat.v1, "get_variable", patched)
    assert v1.train.init_from_checkpoint is patched
    assert v1.get_variable is patched
    monkeypatch.undo()
    assert v1.train.init_from_checkpoint is tf.compat.v1.train.init_from_checkpoint
    assert v1.get_variable is tf.compat.v1.get_variable


@pytest.mark.parametrize("name", ["train", "metrics", "losses", "logging", "gfile",
                                  "python_io", "data", "app", "saved_model"])
def test_tf1_modules_are_tensorflows(name):
    assert getattr(v1, name) is getattr(tf.compat.v1, name)
    # (`summary` is TensorFlow's but for FileWriter: tests/test_summary_file_writer.py)


def test_nn_is_tensorflows_with_tf1_rnn_cells():
    # TensorFlow 2.21's tf.compat.v1.nn.rnn_cell raises "not available with Keras 3".
    assert v1.nn.softmax is tf.compat.v1.nn.softmax
    assert v1.nn.rnn_cell.LSTMCell is v1.contrib.rnn.LSTMCell


def test_unknown_names_raise_attribute_error_with_hints():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_op'"):
        v1.no_such_op  # pylint: disable=pointless-statement
    with pytest.raises(AttributeError, match="tf.contrib was removed in TensorFlow 2"):
        v1.contrib.quantize  # pylint: disable=pointless-statement
    with pytest.raises(AttributeError, match="Use TensorFlow Decision Forests, their successor"):
        v1.estimator.BoostedTreesClassifier  # pylint: disable=pointless-statement
    with pytest.raises(AttributeError, match="provides Estimator, TPUEstimator .* the v2-style "
                                             r"heads \(BinaryClassHead...\)"):
        v1.estimator.NoSuchHead  # pylint: disable=pointless-statement
    assert {"contrib", "estimator", "placeholder", "layers"} <= set(dir(v1))


def test_estimator_serves_the_exporters():
    """`tf.estimator.Exporter` is subclassed at import by TF1-era libraries
    (tensorflow_hub's `LatestModuleExporter`)."""
    train_and_evaluate = importlib.import_module("tpu_estimator_compat.train_and_evaluate_tasks")
    for name in ("Exporter", "LatestExporter", "FinalExporter"):
        assert getattr(v1.estimator, name) is getattr(train_and_evaluate, name)
    assert issubclass(v1.estimator.LatestExporter, v1.estimator.Exporter)


# Overrides ----------------------------------------------------------------------------------

def test_layers_keras_and_compat_overrides():
    legacy = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
    assert v1.layers.dense is legacy.dense and v1.layers.Dense is legacy.Dense
    assert issubclass(v1.layers.BatchNormalization, legacy.BatchNormalization)  # `_moments`
    assert {"dense", "Dense", "Conv2D", "conv2d", "batch_normalization", "dropout"} <= set(
        dir(v1.layers))
    keras = importlib.import_module("tf_keras.api._v1.keras")  # served, Input aside
    assert v1.keras.Model is keras.Model and v1.keras.layers.Dense is keras.layers.Dense
    assert v1.keras.backend is keras.backend and v1.keras.Input is v1.keras.layers.Input
    assert v1.compat.v1 is v1
    assert v1.compat.v2 is tf.compat.v2
    assert v1.compat.as_bytes("a") == b"a"


def _expected(spec):
    """The object `spec` ('module:attr.path') names; skips while a module is not written yet."""
    module_name, _, path = spec.partition(":")
    value = pytest.importorskip(module_name)
    for part in path.split("."):
        if not hasattr(value, part):
            pytest.skip(f"{spec} is not written yet")
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("path, spec", [
    ("contrib.tpu.TPUEstimator", "tpu_estimator_compat.estimator:TPUEstimator"),
    ("contrib.tpu.TPUEstimatorSpec", "tpu_estimator_compat.api.spec:TPUEstimatorSpec"),
    ("contrib.tpu.RunConfig", "tpu_estimator_compat.config.run_config:RunConfig"),
    ("contrib.tpu.TPUConfig", "tpu_estimator_compat.config.tpu_config:TPUConfig"),
    ("contrib.tpu.InputPipelineConfig", "tpu_estimator_compat.config.tpu_config:InputPipelineConfig"),
    ("contrib.tpu.CrossShardOptimizer", "tpu_estimator_compat.api.optimizers:CrossShardOptimizer"),
    ("contrib.tpu.cross_replica_sum", "tpu_estimator_compat.api.optimizers:cross_replica_sum"),
    ("contrib.tpu.bfloat16_scope", "tensorflow:compat.v1.tpu.bfloat16_scope"),
    ("contrib.tpu.outside_compilation", "tensorflow:compat.v1.tpu.outside_compilation"),
    ("estimator.tpu.TPUEstimator", "tpu_estimator_compat.estimator:TPUEstimator"),
    ("compat.v1.estimator.tpu.TPUConfig", "tpu_estimator_compat.config.tpu_config:TPUConfig"),
    ("tpu.CrossShardOptimizer", "tpu_estimator_compat.api.optimizers:CrossShardOptimizer"),
    ("tpu.cross_replica_sum", "tpu_estimator_compat.api.optimizers:cross_replica_sum"),
    ("tpu.bfloat16_scope", "tensorflow:compat.v1.tpu.bfloat16_scope"),
    ("estimator.Estimator", "tpu_estimator_compat.estimator:Estimator"),
    ("estimator.EstimatorSpec", "tpu_estimator_compat.api.spec:EstimatorSpec"),
    ("estimator.ModeKeys", "tpu_estimator_compat.api.spec:ModeKeys"),
    ("estimator.RunConfig", "tpu_estimator_compat.config.run_config:RunConfig"),
    ("estimator.WarmStartSettings", "tpu_estimator_compat.state.warm_start:WarmStartSettings"),
    ("estimator.train_and_evaluate",
     "tpu_estimator_compat.train_and_evaluate_tasks:train_and_evaluate"),
    ("estimator.TrainSpec", "tpu_estimator_compat.train_and_evaluate_tasks:TrainSpec"),
    ("estimator.SessionRunHook", "tensorflow:compat.v1.train.SessionRunHook"),
    ("estimator.SessionRunArgs", "tensorflow:compat.v1.train.SessionRunArgs"),
    ("estimator.LoggingTensorHook", "tensorflow:compat.v1.train.LoggingTensorHook"),
    ("estimator.StopAtStepHook", "tensorflow:compat.v1.train.StopAtStepHook"),
    ("estimator.NanTensorHook", "tensorflow:compat.v1.train.NanTensorHook"),
    ("estimator.CheckpointSaverHook", "tensorflow:compat.v1.train.CheckpointSaverHook"),
    ("estimator.export.ServingInputReceiver",
     "tpu_estimator_compat.export.receivers:ServingInputReceiver"),
    ("estimator.export.build_raw_serving_input_receiver_fn",
     "tpu_estimator_compat.export.receivers:build_raw_serving_input_receiver_fn"),
    ("estimator.export.PredictOutput", "tpu_estimator_compat.api.export_outputs:PredictOutput"),
    ("estimator.export.ClassificationOutput",
     "tpu_estimator_compat.api.export_outputs:ClassificationOutput"),
    ("contrib.summary.create_file_writer",
     "tpu_estimator_compat.rebuilt_apis.contrib_summary:create_file_writer"),
    ("contrib.summary.always_record_summaries",
     "tpu_estimator_compat.rebuilt_apis.contrib_summary:always_record_summaries"),
    ("contrib.framework.get_or_create_global_step",
     "tensorflow:compat.v1.train.get_or_create_global_step"),
    ("contrib.training.checkpoints_iterator", "tensorflow:compat.v1.train.checkpoints_iterator"),
    ("contrib.cluster_resolver.TPUClusterResolver",
     "tpu_estimator_compat.engine.cluster_resolver:TPUClusterResolver"),
    ("distribute.cluster_resolver.TPUClusterResolver",
     "tpu_estimator_compat.engine.cluster_resolver:TPUClusterResolver"),
    ("distribute.cluster_resolver.SimpleClusterResolver",
     "tensorflow:distribute.cluster_resolver.SimpleClusterResolver"),
    ("distribute.MirroredStrategy", "tensorflow:compat.v1.distribute.MirroredStrategy"),
])
def test_public_name_resolves_to(path, spec):
    expected = _expected(spec)
    value = v1
    for part in path.split("."):
        value = getattr(value, part)
    assert value is expected


def test_tpu_helpers_work_off_tpu():
    with tf.Graph().as_default():
        with v1.contrib.tpu.bfloat16_scope():
            weight = v1.get_variable("w", [2], dtype=tf.bfloat16,
                                     initializer=v1.ones_initializer())
        assert weight.dtype == tf.bfloat16
        assert [(v.op.name, v.dtype.base_dtype) for v in v1.global_variables()] == [
            ("w", tf.float32)]  # Stored as float32, read as bfloat16.
    doubled = tf.function(lambda x: v1.tpu.outside_compilation(lambda a: a * 2.0, x))
    assert doubled(tf.constant(3.0)).numpy() == 6.0  # A passthrough outside a TPU context.


def test_contrib_tpu_loop_helpers_run_their_body_as_tf1_did():
    """tf.contrib.tpu.repeat(n, body, inputs) and while_loop(condition, body, inputs): the
    loop-carried values; operations the body returns run every iteration."""
    counter = tf.Variable(0)

    @tf.function
    def loops():
        repeated = v1.contrib.tpu.repeat(5, lambda x: x + 2, [tf.constant(1)])
        looped = v1.contrib.tpu.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s * 2.0),
                                           [0, 1.0])
        counted = v1.contrib.tpu.repeat(3, lambda: counter.assign_add(1).op)
        with tf.control_dependencies([counted]):
            return repeated, looped, counter.read_value()

    repeated, looped, count = loops()
    assert [t.numpy() for t in repeated] == [11]
    assert [t.numpy() for t in looped] == [4, 16.0]
    assert count.numpy() == 3


def test_submodule_imports():
    from tpu_estimator_compat.v1.contrib import layers as contrib_layers  # noqa: PLC0415
    from tpu_estimator_compat.v1.contrib import tpu  # noqa: PLC0415
    from tpu_estimator_compat.v1.estimator import tpu as tpu_estimator  # noqa: PLC0415
    import tpu_estimator_compat.v1.estimator.tpu  # noqa: PLC0415
    import tpu_estimator_compat.v1.contrib.data  # noqa: PLC0415

    assert contrib_layers.layer_norm is v1.contrib.layers.layer_norm
    assert tpu is v1.contrib.tpu
    assert tpu_estimator is tpu_estimator_compat.v1.estimator.tpu is v1.estimator.tpu
    assert tpu_estimator_compat.v1.contrib.data.AUTOTUNE == -1


# tf.data -------------------------------------------------------------------------------------

def _values(dataset):
    with tf.Graph().as_default():
        next_element = dataset().make_one_shot_iterator().get_next()
        values = []
        with v1.Session() as session:
            try:
                while True:
                    values.append(session.run(next_element).tolist())
            except tf.errors.OutOfRangeError:
                return values


@pytest.mark.slow  # trains or evaluates for several seconds
def test_datasets_keep_tf1_iterators_through_contrib_data():
    contrib_data = v1.contrib.data
    assert _values(lambda: v1.data.Dataset.range(7).apply(
        contrib_data.map_and_batch(lambda x: x * 10, 3))) == [[0, 10, 20], [30, 40, 50], [60]]
    assert _values(lambda: v1.data.Dataset.range(7).apply(
        contrib_data.map_and_batch(lambda x: x, 3, drop_remainder=True))) == [[0, 1, 2],
                                                                              [3, 4, 5]]
    assert _values(lambda: v1.data.Dataset.range(7).apply(
        contrib_data.batch_and_drop_remainder(2))) == [[0, 1], [2, 3], [4, 5]]
    assert _values(lambda: v1.data.Dataset.range(2).apply(contrib_data.parallel_interleave(
        lambda x: v1.data.Dataset.from_tensors(x).repeat(2), cycle_length=2))) == [0, 1, 0, 1]
    repeated = _values(lambda: v1.data.Dataset.range(3).apply(
        contrib_data.shuffle_and_repeat(3, count=2, seed=1)))
    assert sorted(repeated[:3]) == [0, 1, 2] and sorted(repeated[3:]) == [0, 1, 2]


def test_dataset_batches_have_static_size_and_initializable_iterator():
    with tf.Graph().as_default():
        dataset = v1.data.Dataset.from_tensor_slices(np.arange(10)).apply(
            v1.contrib.data.batch_and_drop_remainder(4))
        iterator = dataset.make_initializable_iterator()
        batch = iterator.get_next()
        assert batch.shape.as_list() == [4]
        with v1.Session() as session:
            session.run(iterator.initializer)
            assert session.run(batch).tolist() == [0, 1, 2, 3]


def test_gfile_and_python_io_round_trip(tmp_path):
    path = str(tmp_path / "records")
    with v1.python_io.TFRecordWriter(path) as writer:
        writer.write(b"a")
        writer.write(b"bc")
    assert list(v1.python_io.tf_record_iterator(path)) == [b"a", b"bc"]
    with v1.gfile.GFile(str(tmp_path / "f.txt"), "w") as f:
        f.write("hello")
    assert v1.gfile.Exists(str(tmp_path / "f.txt"))
    assert v1.gfile.Glob(str(tmp_path / "*.txt")) == [str(tmp_path / "f.txt")]


# TF1 shapes for TF1 code, TF2 shapes elsewhere ----------------------------------------------

def test_shape_policy_is_installed():
    assert _shapes.installed()
    override = tensor_shape._TENSORSHAPE_V2_OVERRIDE  # pylint: disable=protected-access
    assert override is _shapes.POLICY


def test_tf1_graph_code_gets_dimensions():
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 6])
        assert isinstance(x.shape[-1], tensor_shape.Dimension)
        assert x.shape[-1].value == 6 and x.shape[0].value is None
        assert [d.value for d in x.get_shape()] == [None, 6]
        assert x.get_shape().as_list() == [None, 6]
        seen = []
        v1.data.Dataset.range(3).map(lambda v: seen.append(tf.reshape(v, [1]).shape[0].value)
                                     or v)
        assert seen == [1]  # A map function traced inside a TF1 graph is TF1 code too.


def test_tf2_code_keeps_ints_eagerly_and_in_tf_function():
    assert type(tf.zeros([2, 3]).shape[-1]) is int  # pylint: disable=unidiomatic-typecheck
    assert tf.TensorShape([None, 3])[0] is None
    seen = []

    @tf.function
    def traced(x):
        seen.append((type(x.shape[1]), x.shape[0], list(x.shape)))
        return tf.shape(x)

    assert traced(tf.zeros([2, 3])).numpy().tolist() == [2, 3]
    assert seen == [(int, 2, [2, 3])]


def test_tf1_shapes_scope_is_per_thread_and_reentrant():
    shape = tf.TensorShape([4, 5])
    other_thread = []
    with tf1_shapes():
        with tf1_shapes():
            assert shape[1].value == 5
        assert shape[1].value == 5
        worker = threading.Thread(target=lambda: other_thread.append(type(shape[1])))
        worker.start()
        worker.join()
    assert other_thread == [int]
    assert type(shape[1]) is int  # pylint: disable=unidiomatic-typecheck


def test_install_respects_an_explicit_tf1_shape_choice(monkeypatch):
    monkeypatch.setattr(tensor_shape, "_TENSORSHAPE_V2_OVERRIDE", False)
    _shapes.install()
    assert tensor_shape._TENSORSHAPE_V2_OVERRIDE is False  # pylint: disable=protected-access
    assert not _shapes.installed()


def test_keras_3_unchanged_eagerly_and_in_tf_function():
    import keras  # noqa: PLC0415

    v1.layers.dense  # pylint: disable=pointless-statement  # tf_keras imported
    layer = keras.layers.Dense(3, kernel_initializer="ones")
    assert layer(np.ones([2, 4], np.float32)).numpy().tolist() == [[4.0] * 3] * 2
    assert tuple(layer.kernel.shape) == (4, 3)
    traced = tf.function(lambda x: layer(x))
    assert traced(tf.ones([5, 4])).shape == (5, 3)


# A TF1 program ------------------------------------------------------------------------------

@pytest.mark.slow  # trains or evaluates for several seconds
def test_tf1_idiom_graph_trains():
    rng = np.random.RandomState(0)
    features = rng.randn(32, 5).astype(np.float32)
    targets = features @ rng.randn(5, 1).astype(np.float32)
    with v1.Graph().as_default():
        v1.set_random_seed(0)
        x = v1.placeholder(v1.float32, [None, 5], name="x")
        y = v1.placeholder(v1.float32, [None, 1], name="y")
        assert x.shape[-1].value == 5
        with v1.variable_scope("model"):
            hidden = v1.layers.dense(x, 8, activation=v1.nn.relu, name="d1")
            hidden = v1.contrib.layers.layer_norm(hidden, begin_norm_axis=-1,
                                                  begin_params_axis=-1)
            prediction = v1.layers.dense(hidden, 1, name="d2")
        loss = v1.losses.mean_squared_error(y, prediction)
        global_step = v1.train.get_or_create_global_step()
        train_op = v1.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)
        assert sorted(v.op.name for v in v1.trainable_variables()) == [
            "model/LayerNorm/beta", "model/LayerNorm/gamma", "model/d1/bias",
            "model/d1/kernel", "model/d2/bias", "model/d2/kernel"]
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            feed = {x: features, y: targets}
            first = session.run(loss, feed)
            for _ in range(50):
                session.run(train_op, feed)
            assert session.run(loss, feed) < 0.5 * first
            assert session.run(global_step) == 50


# TPUClusterResolver --------------------------------------------------------------------------

@pytest.fixture
def no_tpu_environment(monkeypatch):
    for name in ("TPU_NAME", "KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS", "TPU_CONFIG",
                 cluster_resolver.SIMULATED_TPU_CORES_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def silent_metadata_server(monkeypatch, no_tpu_environment):
    """A GCE metadata server that accepts connections and never answers."""
    del no_tpu_environment
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    for name in ("GCE_METADATA_HOST", "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:%d" % server.getsockname()[1])
    yield
    server.close()  # Resets the blocked lookup so its thread ends.


@pytest.mark.parametrize("args", [(), ("",), (None,), ("my-tpu", "us-central1-b", "proj")])
def test_construction_needs_no_tpu_and_no_network(silent_metadata_server, args):
    del silent_metadata_server
    start = time.monotonic()
    resolver = v1.contrib.cluster_resolver.TPUClusterResolver(*args)
    assert time.monotonic() - start < 0.5
    assert resolver.get_job_name() == "worker" and resolver.task_id == 0
    assert copy.deepcopy(resolver) is resolver


def test_no_tpu_error_says_what_was_tried_and_how_to_run_without(no_tpu_environment):
    del no_tpu_environment
    resolver = cluster_resolver.TPUClusterResolver("")
    with pytest.raises(cluster_resolver.NoTPUFoundError) as raised:
        resolver.master()
    message = str(raised.value)
    assert message.startswith(
        "No TPU found: TPUClusterResolver(tpu='', zone=None, project=None) (no TPU name given, "
        "and none of $TPU_NAME, $KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS, $TPU_CONFIG is set); looking "
        "up the TPU failed with ValueError: Please provide a TPU Name to connect to. To run "
        "without a TPU, pass `use_tpu=False` to TPUEstimator, or set the environment variable "
        "TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES=8 to run the TPU semantics")
    assert isinstance(raised.value, RuntimeError)
    assert isinstance(raised.value.__cause__, ValueError)
    with pytest.raises(cluster_resolver.NoTPUFoundError):
        resolver.resolve()
    with pytest.raises(cluster_resolver.NoTPUFoundError):
        cluster_resolver.TPUClusterResolver.connect(tpu="")


def test_unanswered_lookup_is_bounded(silent_metadata_server, monkeypatch):
    del silent_metadata_server
    monkeypatch.setenv("TPU_NAME", "tpu-from-env")
    resolver = cluster_resolver.TPUClusterResolver(lookup_timeout_secs=1.0)
    start = time.monotonic()
    with pytest.raises(cluster_resolver.NoTPUFoundError,
                       match=r"no TPU name given; using \$TPU_NAME='tpu-from-env'\); looking up "
                             r"the TPU did not finish within 1 s \(the GCE metadata server"):
        resolver.cluster_spec()
    assert time.monotonic() - start < 5


def test_grpc_address_resolves_without_network(no_tpu_environment):
    del no_tpu_environment
    resolver = cluster_resolver.TPUClusterResolver("grpc://10.1.2.3:8470")
    assert resolver.master() == "grpc://10.1.2.3:8470"
    assert resolver.get_master() == "grpc://10.1.2.3:8470"
    assert resolver.cluster_spec().as_dict() == {"worker": ["10.1.2.3:8470"]}
    real = resolver.resolve()
    assert isinstance(real, tf.distribute.cluster_resolver.TPUClusterResolver)
    assert resolver.resolve() is real
    assert resolver.get_coordination_service_leader() == "/job:worker/task:0"  # delegated


def test_simulated_tpu_needs_no_lookup(no_tpu_environment, monkeypatch):
    del no_tpu_environment
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "8")
    resolver = cluster_resolver.TPUClusterResolver("my-tpu")
    assert resolver.simulated_cores == 8
    assert resolver.master() == ""
    assert resolver.cluster_spec().as_dict() == {}
    assert resolver.num_accelerators() == {"TPU": 8}
    monkeypatch.setenv(cluster_resolver.SIMULATED_TPU_CORES_ENV, "eight")
    with pytest.raises(ValueError, match="`TPU_ESTIMATOR_COMPAT_SIMULATED_TPU_CORES` must be a "
                                         "positive number of TPU cores to simulate, e.g. 8. "
                                         "Received: 'eight'"):
        cluster_resolver.TPUClusterResolver()
