"""SavedModel export: MetaGraph layout, signatures, numerics in a fresh process, errors.

A tiny TF1 model is trained-by-assignment in a `tf.Graph` and saved with
`tf.compat.v1.train.Saver` as `model.ckpt-5` (the layout of the engine's checkpoints).
Exports are read back as protos in this process; serving is checked in fresh processes
(`tf.saved_model.load`, `saved_model_cli`), three of them in all.
"""
import importlib
import json
import logging
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

import tpu_estimator_compat as tec
from tpu_estimator_compat.export import saved_model as export
from tpu_estimator_compat.api import export_outputs as eo
from tpu_estimator_compat.export import receivers
from tpu_estimator_compat.api.spec import EstimatorSpec, ModeKeys, TPUEstimatorSpec
from tpu_estimator_compat.estimator import export_estimator_savedmodel

_layers = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
_PYTHON = sys.executable
_CLI = os.path.join(os.path.dirname(_PYTHON), "saved_model_cli")
_INPUTS = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], np.float32)
_CLASSES = ["a", "b", "c"]
_FEATURE_SPEC = {"x": tf.io.FixedLenFeature([2], tf.float32)}


def _model_fn(features, labels, mode, params, config):
    """Two dense layers; `params['heads']` adds classify/regress outputs."""
    del config
    _model_fn.seen_params.append(dict(params))
    x = features["x"] if isinstance(features, dict) else features
    hidden = _layers.dense(x, 4, activation=tf.nn.relu, name="hidden")
    logits = _layers.dense(hidden, 3, name="logits")
    probs = tf.nn.softmax(logits)
    predictions = {"logits": logits, "probs": probs}
    if mode == ModeKeys.EVAL:
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        metric_fn = lambda y, l: {"acc": tf.compat.v1.metrics.accuracy(y, tf.argmax(l, 1))}
        return TPUEstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
    export_outputs = None
    if params.get("heads"):
        # Strings cannot live on a TPU: the documented pattern builds them on the host.
        classes = tf.compat.v1.tpu.outside_compilation(
            lambda: tf.tile(tf.constant([_CLASSES]), [tf.shape(x)[0], 1]))
        export_outputs = {
            "serving_default": eo.PredictOutput(predictions),
            "classification": eo.ClassificationOutput(scores=probs, classes=classes),
            "regression": eo.RegressionOutput(tf.reduce_sum(logits, 1)),
        }
    if params.get("estimator_spec"):
        return EstimatorSpec(mode, predictions=predictions, export_outputs=export_outputs)
    return TPUEstimatorSpec(mode, predictions=predictions, export_outputs=export_outputs)


_model_fn.seen_params = []


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A model_dir holding `model.ckpt-5` with seeded weights and global_step 5."""
    path = str(tmp_path_factory.mktemp("model_dir"))
    rng = np.random.RandomState(0)
    with tf.Graph().as_default():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        _model_fn({"x": tf.compat.v1.placeholder(tf.float32, [None, 2])}, None,
                  ModeKeys.PREDICT, {}, None)
        assigns = [v.assign(rng.uniform(-1, 1, v.shape).astype(np.float32))
                   for v in tf.compat.v1.trainable_variables()]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(assigns + [global_step.assign(5)])
            tf.compat.v1.train.Saver().save(session, os.path.join(path, "model.ckpt"),
                                            global_step=5)
    return path


@pytest.fixture(scope="module")
def expected(model_dir):
    """The model_fn graph run directly on `_INPUTS` with the checkpoint restored."""
    with tf.Graph().as_default():
        tf.compat.v1.train.get_or_create_global_step()
        x = tf.compat.v1.placeholder(tf.float32, [None, 2])
        spec = _model_fn({"x": x}, None, ModeKeys.PREDICT, {}, None)
        with tf.compat.v1.Session() as session:
            tf.compat.v1.train.Saver().restore(session, tf.train.latest_checkpoint(model_dir))
            return session.run(spec.predictions, {x: _INPUTS})


def _export(model_dir, base, receiver_fn, **kwargs):
    kwargs.setdefault("user_params", {"heads": True})
    return export.export_saved_model(export.ExportPlan(
        _model_fn, config=None, checkpoint_path=export.resolve_checkpoint_path(model_dir),
        export_dir_base=str(base), serving_input_receiver_fn=receiver_fn, **kwargs))


def _raw_receiver_fn():
    return receivers.build_raw_serving_input_receiver_fn(
        {"x": tf.TensorSpec([None, 2], tf.float32)})


def _parsing_receiver_fn_with_raw_alternative():
    receiver = receivers.build_parsing_serving_input_receiver_fn(_FEATURE_SPEC)()
    return receivers.ServingInputReceiver(receiver.features, receiver.receiver_tensors,
                                          {"raw": {"x": receiver.features["x"]}})


def _serialized_examples():
    return [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))}))
        .SerializeToString() for row in _INPUTS.tolist()]


def _meta_graphs(export_dir):
    """{frozenset(tags): MetaGraphDef} of a binary SavedModel."""
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, b"saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    return {frozenset(m.meta_info_def.tags): m for m in saved_model.meta_graphs}


_SERVE, _SERVE_TPU = frozenset(["serve"]), frozenset(["serve", "tpu"])


@pytest.fixture(scope="module")
def exports(model_dir, tmp_path_factory):
    """A raw-tensor export and a tf.Example-parsing export, both with both MetaGraphs."""
    base = tmp_path_factory.mktemp("exports")
    return {"raw": _export(model_dir, base, _raw_receiver_fn(),
                           user_params={"heads": False}),
            "parsing": _export(model_dir, base, _parsing_receiver_fn_with_raw_alternative)}


def _run_fresh(script, *args):
    result = subprocess.run([_PYTHON, "-c", textwrap.dedent(script), *args],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # starts processes
def test_tf2_load_in_fresh_process_matches_model_fn_graph(exports, expected):
    script = """
        import json, sys
        import numpy as np
        import tensorflow as tf
        raw_dir, parsing_dir, inputs, examples = sys.argv[1:5]
        inputs = np.array(json.loads(inputs), np.float32)
        examples = tf.constant([bytes.fromhex(e) for e in json.loads(examples)])
        try:  # two MetaGraphs: TF2's loader needs tags (docs/how-it-works.md)
            tf.saved_model.load(raw_dir)
            untagged = {"error": ["none"]}
        except ValueError as error:
            untagged = {"error": [str(error)]}
        raw = tf.saved_model.load(raw_dir, tags=["serve"]).signatures
        parsing = tf.saved_model.load(parsing_dir, tags=["serve"]).signatures
        results = {
            "untagged": untagged,
            "raw": raw["serving_default"](x=tf.constant(inputs)),
            "parsing": parsing["serving_default"](examples=examples),
            "raw_alternative": parsing["raw:serving_default"](x=tf.constant(inputs)),
            "classify": parsing["classification"](inputs=examples),
            "regress": parsing["regression"](inputs=examples),
        }
        print(json.dumps({name: {k: v.numpy().tolist() if hasattr(v, "numpy") else v
                                 for k, v in out.items()}
                          for name, out in results.items()}, default=bytes.decode))
    """
    out = _run_fresh(script, exports["raw"], exports["parsing"], json.dumps(_INPUTS.tolist()),
                     json.dumps([e.hex() for e in _serialized_examples()]))
    assert "requires a `tags=` argument if there is more than one MetaGraph" in \
        out["untagged"]["error"][0]
    for name in ("raw", "parsing", "raw_alternative"):
        assert sorted(out[name]) == ["logits", "probs"]
        for key in ("logits", "probs"):
            np.testing.assert_allclose(out[name][key], expected[key], atol=1e-5, rtol=0)
    np.testing.assert_allclose(out["classify"]["scores"], expected["probs"], atol=1e-5, rtol=0)
    assert out["classify"]["classes"] == [_CLASSES] * len(_INPUTS)
    np.testing.assert_allclose(out["regress"]["outputs"], expected["logits"].sum(1),
                               atol=1e-5, rtol=0)


@pytest.mark.slow  # starts processes
def test_saved_model_cli_show_and_run(exports, expected, tmp_path):
    export_dir = exports["parsing"].decode()
    shown = subprocess.run([_CLI, "show", "--dir", export_dir, "--all"],
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "MetaGraphDef with tag-set: 'serve' contains the following SignatureDefs" in (
        shown.stdout)
    assert "MetaGraphDef with tag-set: 'serve, tpu' contains the following SignatureDefs" in (
        shown.stdout)
    for name in ("serving_default", "classification", "regression", "raw:serving_default"):
        assert shown.stdout.count(f"signature_def['{name}']") == 2  # One per MetaGraph.
    assert "Method name is: tensorflow/serving/classify" in shown.stdout
    examples = json.dumps([{"x": row} for row in _INPUTS.tolist()])
    ran = subprocess.run(
        [_CLI, "run", "--dir", export_dir, "--tag_set", "serve",
         "--signature_def", "serving_default", "--input_examples", f"examples={examples}",
         "--outdir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    for key in ("logits", "probs"):
        np.testing.assert_allclose(np.load(tmp_path / f"{key}.npy"), expected[key],
                                   atol=1e-5, rtol=0)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_export_layout_and_signatures(exports):
    export_dir = exports["parsing"]
    assert isinstance(export_dir, bytes)
    base, name = os.path.split(export_dir)
    assert name.isdigit() and abs(int(name) - time.time()) < 600
    assert not [n for n in os.listdir(base) if n.startswith(b"temp-")]
    assert sorted(os.listdir(os.path.join(export_dir, b"variables"))) == [
        b"variables.data-00000-of-00001", b"variables.index"]
    meta_graphs = _meta_graphs(export_dir)
    assert set(meta_graphs) == {_SERVE, _SERVE_TPU}
    for meta_graph in meta_graphs.values():
        signatures = meta_graph.signature_def
        assert sorted(signatures) == ["classification", "raw:serving_default", "regression",
                                      "serving_default"]
        assert list(signatures["serving_default"].inputs) == ["examples"]
        assert signatures["serving_default"].inputs["examples"].name == (
            "input_example_tensor:0")
        assert list(signatures["classification"].inputs) == ["inputs"]
    reader = tf.train.load_checkpoint(os.path.join(export_dir, b"variables", b"variables"))
    assert reader.get_tensor("global_step") == 5
    assert sorted(reader.get_variable_to_shape_map()) == [
        "global_step", "hidden/bias", "hidden/kernel", "logits/bias", "logits/kernel"]


def _tpu_function(meta_graph):
    (function,) = meta_graph.graph_def.library.function
    return function


def test_tpu_meta_graph_is_tpu_inference(exports):
    meta_graph = _meta_graphs(exports["parsing"])[_SERVE_TPU]
    function = _tpu_function(meta_graph)
    calls = [n for n in meta_graph.graph_def.node if n.op == "TPUPartitionedCall"]
    assert len(calls) == 1 and calls[0].attr["f"].func.name == function.signature.name
    ordinal = next(n for n in meta_graph.graph_def.node if n.op == "TPUOrdinalSelector")
    assert calls[0].input[-1] == ordinal.name  # device_ordinal: round-robin over cores.
    assert dict(meta_graph.meta_info_def.function_aliases) == {
        function.signature.name: "tpu_func"}
    inside = {n.op for n in function.node_def}
    assert {"TPUReplicateMetadata", "TPUReplicatedOutput", "MatMul", "Softmax"} <= inside
    # Input parsing and the variables stay on the host, outside the TPU function.
    outside = {n.op for n in meta_graph.graph_def.node}
    assert {"ParseExampleV2", "VarHandleOp"} <= outside and "MatMul" not in outside
    # The classes string op was placed with outside_compilation (host side).
    tile = next(n for n in function.node_def if n.op == "Tile")
    assert "_xla_outside_compilation" in tile.attr
    for signature in meta_graph.signature_def.values():
        assert all(t.name.startswith("TPUPartitionedCall:") for t in signature.outputs.values())
    assert meta_graph.signature_def["serving_default"].outputs["probs"].tensor_shape.dim[1].size \
        == 3
    # No variables are saved for it next to the CPU graph: the names are shared.
    assert meta_graph.saver_def.restore_op_name


def _on_cpu(tpu_meta_graph):
    """A copy of a `{serve, tpu}` MetaGraph with its TPU ops replaced by 1-core CPU ones.

    Test-only surgery to check the wiring without a TPU: TPUPartitionedCall becomes
    StatefulPartitionedCall (dropping the core ordinal), TPUReplicatedOutput an Identity,
    and the replication metadata / compilation result no-ops.
    """
    meta_graph = type(tpu_meta_graph)()
    meta_graph.CopyFrom(tpu_meta_graph)
    function = _tpu_function(meta_graph)
    renamed_outputs = {}
    for node in function.node_def:
        if node.op in ("TPUReplicateMetadata", "TPUCompilationResult"):
            node.op = "NoOp"
            node.ClearField("attr")
        elif node.op == "TPUReplicatedOutput":
            node.op = "Identity"
            del node.attr["num_replicas"]
            renamed_outputs[f"{node.name}:outputs:0"] = f"{node.name}:output:0"
    for node in function.node_def:
        node.input[:] = [renamed_outputs.get(i, i) for i in node.input]
    graph_nodes = meta_graph.graph_def.node
    for node in graph_nodes:
        if node.op == "TPUPartitionedCall":
            node.op = "StatefulPartitionedCall"
            del node.input[-1]
    ordinal = next(n for n in graph_nodes if n.op == "TPUOrdinalSelector")
    graph_nodes.remove(ordinal)
    return meta_graph


def test_tpu_meta_graph_computes_the_model_with_tpu_ops_replaced_by_cpu_ops(
        exports, expected):
    meta_graph = _on_cpu(_meta_graphs(exports["parsing"])[_SERVE_TPU])
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        saver = tf.compat.v1.train.import_meta_graph(meta_graph)
        saver.restore(session, os.path.join(exports["parsing"], b"variables",
                                            b"variables").decode())
        signatures = meta_graph.signature_def
        fetches = {
            "probs": signatures["serving_default"].outputs["probs"].name,
            "logits": signatures["serving_default"].outputs["logits"].name,
            "scores": signatures["classification"].outputs["scores"].name,
            "classes": signatures["classification"].outputs["classes"].name,
            "value": signatures["regression"].outputs["outputs"].name,
        }
        got = session.run(fetches, {"input_example_tensor:0": _serialized_examples()})
    for key, want in (("probs", expected["probs"]), ("logits", expected["logits"]),
                      ("scores", expected["probs"]), ("value", expected["logits"].sum(1))):
        np.testing.assert_allclose(got[key], want, atol=1e-5, rtol=0)
    assert got["classes"].tolist() == [[c.encode() for c in _CLASSES]] * len(_INPUTS)


@pytest.mark.slow  # trains or evaluates for several seconds
def test_params_in_export(model_dir, tmp_path):
    _model_fn.seen_params.clear()
    _export(model_dir, tmp_path, _raw_receiver_fn(), user_params={"lr": 0.1})
    # CPU graph, then the TPU graph: no batch_size, no context; use_tpu False with API V1.
    assert _model_fn.seen_params == [{"lr": 0.1, "use_tpu": False}] * 2
    _model_fn.seen_params.clear()
    path = _export(model_dir, tmp_path, _raw_receiver_fn(), user_params={"lr": 0.1},
                   export_saved_model_api_version=2)
    assert _model_fn.seen_params == [{"lr": 0.1, "use_tpu": False},
                                     {"lr": 0.1, "use_tpu": True}]
    # API V2 leaves the TPU rewrite to model_fn: this one did none.
    assert not _meta_graphs(path)[_SERVE_TPU].graph_def.library.function


def test_export_to_tpu_false_writes_only_serve(model_dir, tmp_path):
    path = _export(model_dir, tmp_path, _raw_receiver_fn(), export_to_tpu=False)
    assert set(_meta_graphs(path)) == {_SERVE}


@pytest.mark.slow  # trains or evaluates for several seconds
def test_use_tpu_false_estimator_still_writes_the_tpu_meta_graph(model_dir, tmp_path):
    """The original's export_to_tpu=True (the default) wrote `serve, tpu` whatever use_tpu."""
    for export_to_tpu, tag_sets in ((True, {_SERVE, _SERVE_TPU}), (False, {_SERVE})):
        estimator = tec.TPUEstimator(_model_fn, config=tec.RunConfig(model_dir=model_dir),
                                     use_tpu=False, params={"heads": True},
                                     export_to_tpu=export_to_tpu)
        path = estimator.export_saved_model(str(tmp_path / str(export_to_tpu)),
                                            _raw_receiver_fn())
        assert set(_meta_graphs(path)) == tag_sets


def test_export_estimator_savedmodel_exports_an_estimator_for_tpu(model_dir, tmp_path):
    """The original's module helper: a TPUEstimator(use_tpu=True) on the estimator's
    model_fn, params and model_dir writes both MetaGraphs (Estimator's own export: `serve`)."""
    estimator = tec.Estimator(_model_fn, model_dir=model_dir, params={"heads": True})
    _model_fn.seen_params.clear()
    path = export_estimator_savedmodel(estimator, str(tmp_path), _raw_receiver_fn())
    assert set(_meta_graphs(path)) == {_SERVE, _SERVE_TPU}
    assert os.path.dirname(path) == os.fsencode(tmp_path)
    assert _model_fn.seen_params == [{"heads": True, "use_tpu": False}] * 2

def test_export_to_cpu_false_writes_only_tpu_graph_with_variables(model_dir, tmp_path):
    path = _export(model_dir, tmp_path, _raw_receiver_fn(), export_to_cpu=False,
                   user_params={"estimator_spec": True})
    meta_graphs = _meta_graphs(path)
    assert set(meta_graphs) == {_SERVE_TPU}
    assert list(meta_graphs[_SERVE_TPU].signature_def) == ["serving_default"]
    saved = tf.train.load_checkpoint(os.path.join(path, b"variables", b"variables"))
    trained = tf.train.load_checkpoint(model_dir)
    for name in ("hidden/kernel", "logits/bias", "global_step"):
        np.testing.assert_array_equal(saved.get_tensor(name), trained.get_tensor(name))


def test_eval_mode_exports_only_cpu_graph_with_warning(model_dir, tmp_path, caplog):
    receiver_fn = receivers.build_raw_supervised_input_receiver_fn(
        {"x": tf.TensorSpec([None, 2], tf.float32)}, tf.TensorSpec([None], tf.int64))
    with caplog.at_level(logging.WARNING):
        path = _export(model_dir, tmp_path, receiver_fn, mode=ModeKeys.EVAL)
    assert ("TPUEstimator only handles mode PREDICT for exporting when `export_to_tpu` is "
            "`True`; Mode eval will be ignored for TPU.") in caplog.text
    meta_graphs = _meta_graphs(path)
    assert set(meta_graphs) == {frozenset(["eval"])}
    signature = meta_graphs[frozenset(["eval"])].signature_def["eval"]
    assert signature.method_name == "tensorflow/supervised/eval"
    assert sorted(signature.inputs) == ["label", "x"]
    assert sorted(signature.outputs) == ["loss", "metrics/acc/update_op", "metrics/acc/value"]


def test_assets_extra_and_as_text(model_dir, tmp_path):
    source = tmp_path / "vocab.txt"
    source.write_text("a\nb\n")
    path = _export(model_dir, tmp_path / "out", _raw_receiver_fn(), as_text=True,
                   assets_extra={"nested/vocab.txt": str(source)})
    with open(os.path.join(path, b"assets.extra", b"nested", b"vocab.txt")) as f:
        assert f.read() == "a\nb\n"
    assert b"saved_model.pb" not in os.listdir(path)
    with open(os.path.join(path, b"saved_model.pbtxt")) as f:
        text = f.read()
    assert 'value: "tpu_func"' in text and 'tags: "tpu"' in text


def test_timestamp_is_bumped_past_existing_exports(model_dir, tmp_path):
    now = int(time.time())
    for taken in range(now, now + 3):
        os.makedirs(tmp_path / str(taken))
    path = _export(model_dir, tmp_path, _raw_receiver_fn(), export_to_tpu=False)
    assert int(os.path.basename(path)) >= now + 3
    assert not [n for n in os.listdir(tmp_path) if n.startswith("temp-")]


def test_error_messages(model_dir, tmp_path):
    with pytest.raises(ValueError, match=r"^An input_receiver_fn must be defined\.$"):
        _export(model_dir, tmp_path, None)
    with pytest.raises(ValueError,
                       match=r"^One of export_to_cpu and export_to_tpu must be true\.$"):
        _export(model_dir, tmp_path, _raw_receiver_fn(), export_to_cpu=False,
                export_to_tpu=False)
    def no_scaffold_model_fn(features, mode, params):
        return _model_fn(features, None, mode, params, None)._replace(scaffold_fn=lambda: None)

    with pytest.raises(ValueError, match=r"^TPUEstimatorSpec\.scaffold_fn returns None, which "
                                         r"is not allowed\. Return tf\.compat\.v1\.train\."
                                         r"Scaffold\(\) at the end of scaffold_fn\.$"):
        export.export_saved_model(export.ExportPlan(
            no_scaffold_model_fn, user_params={}, config=None,
            checkpoint_path=export.resolve_checkpoint_path(model_dir),
            export_dir_base=str(tmp_path), serving_input_receiver_fn=_raw_receiver_fn(),
            export_to_cpu=False))
    empty_dir = str(tmp_path / "empty")
    with pytest.raises(ValueError) as e:
        export.resolve_checkpoint_path(empty_dir)
    assert str(e.value) == (
        f"Couldn't find trained model at {empty_dir}: no checkpoint (model.ckpt-N, listed in a "
        "`checkpoint` file) was found there. Train first with this model_dir "
        "(estimator.train), or pass checkpoint_path= naming a checkpoint, or warm_start_from= "
        "to the estimator.")
    assert not os.listdir(tmp_path)  # Nothing was written by the failed calls.


def test_missing_variable_and_bad_tpu_export_output(model_dir, tmp_path):
    def bigger_model_fn(features, mode, params):
        extra = tf.compat.v1.get_variable("extra", [1])
        spec = _model_fn(features, None, mode, params, None)
        return spec._replace(predictions={**spec.predictions, "extra": extra + 0.0})

    with pytest.raises(ValueError) as e:
        export.export_saved_model(export.ExportPlan(
            bigger_model_fn, user_params={}, config=None,
            checkpoint_path=export.resolve_checkpoint_path(model_dir),
            export_dir_base=str(tmp_path), serving_input_receiver_fn=_raw_receiver_fn()))
    assert str(e.value).startswith(
        "Could not load all requested variables from checkpoint. Please make sure your "
        "model_fn does not expect variables that were not saved in the checkpoint.\n\n"
        "Encountered error with mode `infer` while restoring checkpoint from: "
        f"`{model_dir}/model.ckpt-5`. Full Traceback:\n\n")
    assert not os.listdir(tmp_path)  # The temp dir of the failed export was removed.

    def opaque_model_fn(features, mode, params):
        spec = _model_fn(features, None, mode, params, None)
        return TPUEstimatorSpec(mode, predictions=spec.predictions,
                                export_outputs={"serving_default": _Opaque()})

    with pytest.raises(ValueError, match="^`export_output` must be have type "
                                         "`ClassificationOutput`, `RegressionOutput`, or "
                                         "`PredictOutput`; got "):
        export.export_saved_model(export.ExportPlan(
            opaque_model_fn, user_params={}, config=None,
            checkpoint_path=export.resolve_checkpoint_path(model_dir),
            export_dir_base=str(tmp_path), serving_input_receiver_fn=_raw_receiver_fn(),
            export_to_cpu=False))


class _Opaque(eo.ExportOutput):
    """An ExportOutput that is none of Classification/Regression/Predict."""

    def as_signature_def(self, receiver_tensors):
        raise ValueError("not servable")


def test_single_non_default_output_is_also_serving_default(model_dir, tmp_path):
    def regression_model_fn(features, mode, params):
        spec = _model_fn(features, None, mode, params, None)
        value = tf.reduce_sum(spec.predictions["logits"], 1)
        return TPUEstimatorSpec(mode, predictions=spec.predictions,
                                export_outputs={"regress": eo.RegressionOutput(value)})

    path = export.export_saved_model(export.ExportPlan(
        regression_model_fn, user_params={}, config=None,
        checkpoint_path=export.resolve_checkpoint_path(model_dir),
        export_dir_base=str(tmp_path),
        serving_input_receiver_fn=receivers.build_parsing_serving_input_receiver_fn(
            _FEATURE_SPEC)))
    meta_graphs = _meta_graphs(path)
    for meta_graph in meta_graphs.values():
        signatures = meta_graph.signature_def
        assert sorted(signatures) == ["regress", "serving_default"]
        assert signatures["serving_default"].method_name == "tensorflow/serving/regress"
        assert signatures["serving_default"].inputs == signatures["regress"].inputs
    cpu_signatures = meta_graphs[_SERVE].signature_def
    assert cpu_signatures["serving_default"] == cpu_signatures["regress"]


def test_serving_input_receivers():
    with tf.Graph().as_default():
        t = tf.compat.v1.placeholder(tf.float32, [None, 2], name="t")
        s = tf.compat.v1.placeholder(tf.string, [None], name="s")
        receiver = receivers.ServingInputReceiver(t, s, {"alt": t})
        assert receiver.features == {"feature": t}
        assert receiver.receiver_tensors == {"input": s}
        assert receiver.receiver_tensors_alternatives == {"alt": {"input": t}}
        assert receivers.ServingInputReceiver({1: t}, {"s": s}).features == {1: t}
        tensor_receiver = receivers.TensorServingInputReceiver(t, s)
        assert tensor_receiver.features is t and tensor_receiver.receiver_tensors == {"input": s}
        sparse = tf.sparse.from_dense(tf.constant([[1.0]]))
        assert receivers.TensorServingInputReceiver(sparse, s).features is sparse
        errors = [
            (lambda: receivers.ServingInputReceiver(None, s), "features must be defined."),
            (lambda: receivers.TensorServingInputReceiver(None, s),
             "features must be defined."),
            (lambda: receivers.ServingInputReceiver({"x": 1.0}, s),
             "feature x must be a Tensor, SparseTensor, or RaggedTensor."),
            (lambda: receivers.TensorServingInputReceiver([t], s),
             "feature must be a Tensor, SparseTensor, or RaggedTensor."),
            (lambda: receivers.ServingInputReceiver(t, {1: s}),
             "receiver_tensor keys must be strings: 1."),
            (lambda: receivers.ServingInputReceiver({1.5: t}, s),
             "feature keys must be strings or ints: 1.5."),
            (lambda: receivers.ServingInputReceiver(t, s, [t]),
             f"receiver_tensors_alternatives must be a dict: {[t]}."),
            (lambda: receivers.ServingInputReceiver(t, None), "receiver_tensors must be defined."),
        ]
        for make, message in errors:
            with pytest.raises(ValueError) as e:
                make()
            assert str(e.value) == message


def test_receiver_fn_builders():
    with tf.Graph().as_default():
        parsing = receivers.build_parsing_serving_input_receiver_fn(
            {"x": tf.io.FixedLenFeature([2], tf.float32),
             "ids": tf.io.VarLenFeature(tf.int64)}, default_batch_size=4)()
        (examples,) = parsing.receiver_tensors.values()
        assert list(parsing.receiver_tensors) == ["examples"]
        assert examples.name == "input_example_tensor:0" and examples.dtype == tf.string
        assert examples.shape.as_list() == [4]
        assert parsing.features["x"].shape.as_list() == [4, 2]
        assert isinstance(parsing.features["ids"], tf.SparseTensor)
        raw = receivers.build_raw_serving_input_receiver_fn(
            {"x": tf.TensorSpec([None, 2], tf.float32), "n": tf.constant([[1, 2, 3]])},
            default_batch_size=8)()
        assert raw.features == raw.receiver_tensors
        assert raw.features["x"].shape.as_list() == [8, 2]
        assert raw.features["n"].shape.as_list() == [8, 3]
        assert raw.features["n"].dtype == tf.int32 and raw.features["n"].op.type == "Placeholder"
        supervised = receivers.build_raw_supervised_input_receiver_fn(
            tf.TensorSpec([None, 2]), {"y": tf.TensorSpec([None], tf.int64)})()
        assert sorted(supervised.receiver_tensors) == ["input", "y"]
        assert supervised.features is supervised.receiver_tensors["input"]
        assert supervised.labels == {"y": supervised.receiver_tensors["y"]}
    with pytest.raises(ValueError) as e:
        receivers.build_raw_supervised_input_receiver_fn(
            {"a": tf.TensorSpec([None])}, {"a": tf.TensorSpec([None])})
    assert str(e.value) == ("Features and labels must have distinct keys. Found overlapping "
                            "keys: {'a'}")


def test_package_export_module_serves_tf_estimator_export_names():
    """`tpu_estimator_compat.export` is what `tf.estimator.export` was (names of TF 2.15's)."""
    import tpu_estimator_compat.export as public  # noqa: PLC0415
    import tpu_estimator_compat.v1 as v1  # noqa: PLC0415
    names = ["ClassificationOutput", "EvalOutput", "ExportOutput", "PredictOutput",
             "RegressionOutput", "ServingInputReceiver", "TensorServingInputReceiver",
             "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn"]
    assert sorted(public.__all__) == names
    for name in names:
        assert getattr(public, name) is getattr(eo if "Output" in name else receivers, name)
    for name in set(names) - {"EvalOutput"}:
        assert getattr(public, name) is getattr(v1.estimator.export, name)
    receiver = public.build_raw_serving_input_receiver_fn(
        {"x": tf.TensorSpec([None, 2], tf.float32)})
    with tf.Graph().as_default():
        assert isinstance(receiver(), public.ServingInputReceiver)


def test_receiver_that_does_not_fit_the_checkpoint_fails_naming_the_variable(model_dir,
                                                                              tmp_path):
    # Trained on width 2: a width-7 placeholder makes hidden/kernel (7, 4) in the graph.
    wide = receivers.build_raw_serving_input_receiver_fn(
        {"x": tf.TensorSpec([None, 7], tf.float32)})
    with pytest.raises(ValueError,
                       match=r"does not fit checkpoint .*model\.ckpt-5 \(1 variable\(s\)\): "
                             r"hidden/kernel: graph \(7, 4\) float32 vs checkpoint \(2, 4\) "
                             r"float32\. Nothing was written.*shapes and dtypes of the "
                             r"features"):
        _export(model_dir, tmp_path, wide)
    assert os.listdir(tmp_path) == []


def test_export_dir_base_that_is_a_file_is_named(model_dir, tmp_path):
    a_file = tmp_path / "exports"
    a_file.write_text("")
    with pytest.raises(ValueError, match=r"Cannot export: export_dir_base is a file, not a "
                                         r"directory; nothing was written"):
        _export(model_dir, a_file, _raw_receiver_fn())
    with pytest.raises(ValueError, match=rf"{a_file}, above export_dir_base "
                                         rf"{a_file}/sub, is a file"):
        _export(model_dir, a_file / "sub", _raw_receiver_fn())


def _variables_of(export_dir):
    reader = tf.train.load_checkpoint(os.path.join(os.fsdecode(export_dir), "variables",
                                                   "variables"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def test_an_export_published_by_another_process_meanwhile_is_neither_returned_nor_touched(
        model_dir, tmp_path):
    # While this call builds its SavedModel, another process takes the timestamp this call
    # started in (it picked that name before this call's temporary directory existed).
    def receiver_fn():
        started = min(int(name.split("-")[1]) for name in os.listdir(tmp_path)
                      if name.startswith("temp-"))
        other = tmp_path / str(started)
        if not other.exists():
            other.mkdir()
            (other / "saved_model.pb").write_text("another process's model")
        return _raw_receiver_fn()()

    path = _export(model_dir, tmp_path, receiver_fn)

    others = [name for name in os.listdir(tmp_path) if name != os.path.basename(os.fsdecode(path))]
    assert len(others) == 1 and others[0].isdigit()
    assert int(os.path.basename(path)) > int(others[0])
    assert (tmp_path / others[0] / "saved_model.pb").read_text() == "another process's model"
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "model.ckpt-5"))
    exported = _variables_of(path)
    for name in ("hidden/kernel", "logits/bias"):
        np.testing.assert_array_equal(exported[name], reader.get_tensor(name))
    assert set(_meta_graphs(path)) == {_SERVE, _SERVE_TPU}


def test_temporary_directories_of_ended_exports_are_removed(model_dir, tmp_path):
    from tpu_estimator_compat.export import export_dirs
    from tpu_estimator_compat.state import sharing
    me = sharing.this_process()
    # Our pid with another start time: a process that ended and whose pid was reused.
    ended = f"temp-1700000000-{me['host']}-{me['pid']}-{me['started'] + 1}-0123abcd"
    running = f"temp-1700000000-{me['host']}-{me['pid']}-{me['started']}-0123abcd"
    elsewhere = f"temp-1700000000-another-host-{me['pid']}-{me['started'] + 1}-0123abcd"
    for name in (ended, running, elsewhere, "temp-1700000000"):
        (tmp_path / name / "variables").mkdir(parents=True)
    assert os.path.basename(export_dirs.temp_dir(tmp_path)) != os.path.basename(
        export_dirs.temp_dir(tmp_path))

    path = _export(model_dir, tmp_path, _raw_receiver_fn(), export_to_tpu=False)

    assert sorted(os.listdir(tmp_path)) == sorted(
        [os.path.basename(os.fsdecode(path)), running, elsewhere, "temp-1700000000"])
