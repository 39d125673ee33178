"""`export_saved_model`: one SavedModel with a `{serve}` and a `{serve, tpu}` MetaGraph.

Export does not use the TF2 training engine. Each MetaGraph is built in a fresh `tf.Graph`
(graph mode): the receiver fn makes the serving placeholders, the user's `model_fn` is called
on them, the variables (TF1 names, as in the training checkpoints) are restored with a
`tf.compat.v1.train.Saver`, and `tf.compat.v1.saved_model.Builder` writes the MetaGraphs.

The `{serve, tpu}` MetaGraph (export API version 1, the default) holds the model_fn built
inside `tf.compat.v1.tpu.rewrite`, traced as a graph function that a `TPUPartitionedCall`
(with a `TPUOrdinalSelector`, i.e. round-robin over the TPU cores) calls; input parsing and
the variables stay on the CPU. That function is aliased `tpu_func` in the MetaGraph's
`meta_info_def.function_aliases`.
"""
import dataclasses
import os
from typing import Any, Callable, Dict, Optional

import tensorflow as tf
from google.protobuf import text_format

from tpu_estimator_compat.state import checkpoints
from tpu_estimator_compat.state import glob_safe
from tpu_estimator_compat.api import export_outputs as export_output_lib
from tpu_estimator_compat import log as logging
from tpu_estimator_compat.tf_internals import tpu as tf_tpu
from tpu_estimator_compat.tf_internals import training as tf_training
from tpu_estimator_compat.engine import lookup_tables
from tpu_estimator_compat.engine import model_bridge
from tpu_estimator_compat.export import export_dirs
from tpu_estimator_compat.export import preflight
from tpu_estimator_compat.export import receivers
from tpu_estimator_compat.export import signatures
from tpu_estimator_compat.api import spec as spec_lib
from tpu_estimator_compat.config import run_config
from tpu_estimator_compat.state import warm_start as warm_start_lib

ModeKeys = spec_lib.ModeKeys

_TAGS_FOR_MODE = {
    ModeKeys.PREDICT: [tf.saved_model.SERVING],
    ModeKeys.TRAIN: [tf.saved_model.TRAINING],
    ModeKeys.EVAL: ["eval"],
}
_TPU_TAGS = [tf.saved_model.SERVING, tf.saved_model.TPU]
_TPU_FUNCTION_ALIAS = "tpu_func"
_TRAIN_OP_KEY = "saved_model_train_op"  # Where the Builder looks for a train op.
_PREDICTIONS_TENSOR_KEY = "_key_when_predictions_is_a_tensor"
_V1_VARIABLE_ARGS = frozenset((
    "initial_value", "trainable", "collections", "validate_shape", "caching_device", "name",
    "variable_def", "dtype", "expected_shape", "import_scope", "constraint", "use_resource",
    "synchronization", "aggregation", "shape"))


def resolve_checkpoint_path(model_dir, checkpoint_path=None, warm_start_from=None):
    """The checkpoint an export restores, chosen as the original Estimator did, by the
    package's one checkpoint-resolution path (`checkpoint_paths.py`).

    Args:
      model_dir: the estimator's model directory.
      checkpoint_path: an explicit checkpoint prefix (or directory); used when set.
      warm_start_from: None, a checkpoint file/dir path, or an object with a
        `ckpt_to_initialize_from` attribute (`WarmStartSettings`); used when `model_dir`
        has no checkpoint.

    Returns:
      A checkpoint prefix such as `model_dir/model.ckpt-100`.

    Raises:
      ValueError: no checkpoint in `model_dir` and nothing to warm-start from.
      checkpoints.CheckpointNotFoundError: `checkpoint_path` or the warm-start path names
        nothing that exists.
    """
    if checkpoint_path:
        return checkpoints.resolve_checkpoint_path(checkpoint_path)
    latest = checkpoints.latest_checkpoint(model_dir) if model_dir else None
    if latest:
        return latest
    if warm_start_from is not None:
        return warm_start_lib.checkpoint_prefix(
            getattr(warm_start_from, "ckpt_to_initialize_from", warm_start_from))
    raise ValueError(
        f"Couldn't find trained model at {model_dir}: no checkpoint (model.ckpt-N, listed in "
        "a `checkpoint` file) was found there. Train first with this model_dir "
        "(estimator.train), or pass checkpoint_path= naming a checkpoint, or "
        "warm_start_from= to the estimator.")


@dataclasses.dataclass(frozen=True)
class _MetaGraphRequest:
    """One MetaGraph to add: its tags, how model_fn is built and whether it saves variables."""
    tags: list
    mode: str
    use_tpu_param: bool
    rewrite_for_tpu: bool
    save_variables: bool


@dataclasses.dataclass
class _BuiltGraph:
    """What the export needs from a built graph."""
    signature_def_map: dict
    scaffold: object
    train_op: object = None
    tpu_function_name: str = None


@dataclasses.dataclass(frozen=True)
class ExportPlan:
    """What `export_saved_model` writes: a call's arguments and the estimator's settings.

    model_fn: the user's TF1 `model_fn`. user_params: the estimator's params; model_fn gets
    a copy with `use_tpu` added (False, except True for the TPU MetaGraph with API version
    2) and no `batch_size`. config: the estimator's `RunConfig` (passed to model_fn;
    `tf_random_seed` and `session_config` are read when present). checkpoint_path: the
    checkpoint to restore (see `resolve_checkpoint_path`). export_dir_base: directory in
    which the timestamped export directory is made. serving_input_receiver_fn: no-argument
    fn returning a `ServingInputReceiver`, `TensorServingInputReceiver` (or, for
    TRAIN/EVAL, a `SupervisedInputReceiver`). assets_extra: dict of destination path
    (relative to `assets.extra/`) to source path. as_text: write `saved_model.pbtxt`
    instead of `saved_model.pb`. export_to_cpu: write the CPU MetaGraph. export_to_tpu:
    write the `{serve, tpu}` MetaGraph (PREDICT only). mode: the `ModeKeys` value model_fn
    is built in. strip_default_attrs: strip default-valued attributes from the NodeDefs.
    export_saved_model_api_version: 1 (or an enum whose `value` is 1) wraps model_fn in the
    TPU inference rewrite; 2 leaves that to model_fn (which then sees `params['use_tpu'] == True`).
    add_use_tpu_param: False leaves `use_tpu` out of params (plain Estimator).
    """
    model_fn: Callable[..., Any]
    user_params: Dict[str, Any]
    config: run_config.RunConfig
    checkpoint_path: str
    export_dir_base: str
    serving_input_receiver_fn: Callable[[], Any]
    assets_extra: Optional[Dict[str, str]] = None
    as_text: bool = False
    export_to_cpu: bool = True
    export_to_tpu: bool = True
    mode: str = ModeKeys.PREDICT
    strip_default_attrs: bool = True
    export_saved_model_api_version: Any = 1  # 1 or 2, or an enum with that `value`
    add_use_tpu_param: bool = True


def export_saved_model(plan) -> bytes:
    """Exports a trained `model_fn` as a SavedModel, as `TPUEstimator.export_saved_model`,
    following `plan` (an `ExportPlan`).

    Writes `export_dir_base/<unix timestamp>/` (built in a temporary directory unique to the
    call and renamed, so a half-written export is never visible: `export_dirs.py`) with the
    MetaGraphs:
      * tags `{serve}` (`{train}`/`{eval}` for those modes): the CPU graph, with variables,
        if `export_to_cpu`;
      * tags `{serve, tpu}`: the TPU inference graph, if `export_to_tpu` and mode PREDICT;
        it carries the variables only when it is the sole MetaGraph.

    Returns:
      The export directory, as bytes.

    Raises:
      ValueError: no receiver fn, no MetaGraph to write, an unknown mode or API version, or
        the checkpoint lacks a variable of the graph.
    """
    if not plan.serving_input_receiver_fn:
        raise ValueError("An input_receiver_fn must be defined.")
    requests = _meta_graph_requests(plan.export_to_cpu, plan.export_to_tpu, plan.mode,
                                    plan.export_saved_model_api_version)
    if not plan.add_use_tpu_param:  # params_for leaves out keys whose value is None
        requests = [dataclasses.replace(r, use_tpu_param=None) for r in requests]
    preflight.check_export_dir_base(plan.export_dir_base)
    export_dirs.remove_abandoned(plan.export_dir_base)
    temp_dir = export_dirs.temp_dir(plan.export_dir_base)
    try:
        builder = tf.compat.v1.saved_model.Builder(temp_dir)
        tpu_function_name = None
        for request in requests:
            built = _add_meta_graph(builder, request, plan)
            tpu_function_name = built.tpu_function_name or tpu_function_name
        builder.save(plan.as_text)
        if tpu_function_name:
            _add_function_alias(temp_dir, _TPU_TAGS, tpu_function_name, plan.as_text)
        _copy_assets_extra(temp_dir, plan.assets_extra)
        export_dir = export_dirs.publish(temp_dir, plan.export_dir_base)
    except _WRITE_ERRORS as error:
        if not preflight.is_write_error(error):
            raise
        raise preflight.ExportWriteError(os.fsdecode(plan.export_dir_base), error) from error
    finally:
        if tf.io.gfile.exists(temp_dir):
            tf.io.gfile.rmtree(temp_dir)
    return export_dir


_WRITE_ERRORS = (tf.errors.ResourceExhaustedError, tf.errors.PermissionDeniedError,
                 tf.errors.UnknownError, OSError)


def _meta_graph_requests(export_to_cpu, export_to_tpu, mode, api_version):
    """The MetaGraphs to write, in order (the first one saves the variables)."""
    if export_to_tpu and mode != ModeKeys.PREDICT:
        logging.warning("TPUEstimator only handles mode PREDICT for exporting when "
                        "`export_to_tpu` is `True`; Mode %s will be ignored for TPU.", mode)
    if not export_to_cpu and not export_to_tpu:
        raise ValueError("One of export_to_cpu and export_to_tpu must be true.")
    if mode not in _TAGS_FOR_MODE:
        raise ValueError(f"Export output type not found for `mode`: {mode}. Expected one of: "
                         f"{list(_TAGS_FOR_MODE)}.")
    api_version = getattr(api_version, "value", api_version)  # An `ExportSavedModelApiVersion`.
    if api_version not in (1, 2):
        raise ValueError(f"export_saved_model_api_version should be 1 or 2; got {api_version}.")
    requests = []
    if export_to_cpu:
        requests.append(_MetaGraphRequest(_TAGS_FOR_MODE[mode], mode, use_tpu_param=False,
                                          rewrite_for_tpu=False, save_variables=True))
    if export_to_tpu and mode == ModeKeys.PREDICT:
        requests.append(_MetaGraphRequest(
            _TPU_TAGS, mode, use_tpu_param=api_version == 2, rewrite_for_tpu=api_version == 1,
            save_variables=not export_to_cpu))
    if not requests:
        # The original wrote a SavedModel without any MetaGraph here.
        raise ValueError(f"Nothing to export: export_to_cpu is False and mode {mode} is not "
                         "exported for TPU.")
    return requests


def _add_meta_graph(builder, request, plan):
    """Builds one graph and adds it to `builder` (with the variables if requested)."""
    with tf.Graph().as_default() as graph:
        tf.compat.v1.train.get_or_create_global_step(graph)
        seed = getattr(plan.config, "tf_random_seed", None)
        if seed is not None:
            tf.compat.v1.random.set_random_seed(seed)
        built = _build_graph(request, plan.model_fn, plan.user_params, plan.config,
                             plan.serving_input_receiver_fn)
        scaffold = built.scaffold or tf.compat.v1.train.Scaffold()
        saver = scaffold.saver or tf.compat.v1.train.Saver(sharded=True)
        local_init_op = scaffold.local_init_op
        if local_init_op is None:
            local_init_op = tf.compat.v1.train.Scaffold.default_local_init_op()
        if built.train_op is not None:
            graph.add_to_collection(_TRAIN_OP_KEY, built.train_op)
        kwargs = dict(tags=request.tags, signature_def_map=built.signature_def_map,
                      assets_collection=graph.get_collection(
                          tf.compat.v1.GraphKeys.ASSET_FILEPATHS),
                      main_op=local_init_op, saver=saver,
                      strip_default_attrs=plan.strip_default_attrs)
        if not request.save_variables:
            builder.add_meta_graph(**kwargs)
            return built
        session_graph = _state_graph(graph, saver) if request.rewrite_for_tpu else graph
        session_config = run_config.local_session_config(plan.config)
        with tf.compat.v1.Session(graph=session_graph, config=session_config) as session:
            preflight.check_graph_fits_checkpoint(saver, plan.checkpoint_path)
            _restore(saver, session, plan.checkpoint_path, request.mode)
            builder.add_meta_graph_and_variables(session, **kwargs)
    return built


def _state_graph(graph, saver):
    """A copy of the part of `graph` that saves and restores its variables.

    A CPU-only session cannot place the TPU ops (no kernels); the saver ops run by name,
    so a session over this copy restores and saves the variables of `graph`.
    """
    saver_def = saver.as_saver_def()
    targets = [saver_def.restore_op_name.split(":")[0],
               saver_def.save_tensor_name.split(":")[0]]
    state_def = tf.compat.v1.graph_util.extract_sub_graph(graph.as_graph_def(), targets)
    with tf.Graph().as_default() as state_graph:
        tf.graph_util.import_graph_def(state_def, name="")
    return state_graph


def _restore(saver, session, checkpoint_path, mode):
    checkpoints.open_reader(checkpoint_path)  # a missing or damaged index: named error
    try:
        saver.restore(session, glob_safe.readable_prefix(checkpoint_path))
    except tf.errors.OpError as e:
        if not (isinstance(e, tf.errors.NotFoundError) and "not found in checkpoint" in str(e)):
            raise checkpoints.corrupt_error(checkpoint_path, e) from e
        raise ValueError(
            "Could not load all requested variables from checkpoint. Please make sure your "
            "model_fn does not expect variables that were not saved in the checkpoint.\n\n"
            f"Encountered error with mode `{mode}` while restoring checkpoint from: "
            f"`{checkpoint_path}`. Full Traceback:\n\n{e}") from e


def _build_graph(request, model_fn, user_params, config, serving_input_receiver_fn):
    """Calls the receiver fn and model_fn in the default graph; returns the signatures."""
    receiver = serving_input_receiver_fn()
    receivers.check_receiver(receiver, serving_input_receiver_fn)
    labels = getattr(receiver, "labels", None)
    params = model_bridge.params_for(user_params, use_tpu=request.use_tpu_param)

    announce = request.tags != _TPU_TAGS  # the original's lines, for the CPU MetaGraph only

    def call():
        if announce:
            logging.info("Calling model_fn.")
        spec = model_bridge.call_model_fn(model_fn, receiver.features, labels, request.mode,
                                          params, config, source="serving_input_receiver_fn")
        if announce:
            logging.info("Done calling model_fn.")
        return spec

    tpu_function_name = None
    if request.rewrite_for_tpu:
        spec, tpu_function_name = _call_rewritten_for_tpu_inference(call)
    else:
        spec = call()
        if isinstance(spec, spec_lib.TPUEstimatorSpec):
            spec = spec.as_estimator_spec()
    export_outputs = signatures.export_outputs_for_mode(
        request.mode, spec.export_outputs, spec.predictions, spec.loss,
        spec.eval_metric_ops)
    signature_def_map = signatures.build_all_signature_defs(
        receiver.receiver_tensors, export_outputs,
        getattr(receiver, "receiver_tensors_alternatives", None),
        serving_only=request.mode == ModeKeys.PREDICT)
    return _BuiltGraph(signature_def_map, spec.scaffold, spec.train_op, tpu_function_name)


@dataclasses.dataclass
class _InferenceSpec:
    """The parts of a PREDICT spec the TPU MetaGraph exports, with CPU-side tensors."""
    predictions: object
    export_outputs: dict
    scaffold: object
    loss = None
    train_op = None
    eval_metric_ops = None


def _export_output_tensors(export_output):
    """The tensors of an export output, in the order `_with_tensors` takes them."""
    if isinstance(export_output, export_output_lib.ClassificationOutput):
        return [export_output.scores, export_output.classes]
    if isinstance(export_output, export_output_lib.RegressionOutput):
        return [export_output.value]
    if isinstance(export_output, export_output_lib.PredictOutput):
        return list(export_output.outputs.values())
    raise ValueError("`export_output` must be have type `ClassificationOutput`, "
                     f"`RegressionOutput`, or `PredictOutput`; got {export_output}.")


def _with_tensors(export_output, tensors):
    """A copy of `export_output` holding `tensors` instead of its own."""
    if isinstance(export_output, export_output_lib.ClassificationOutput):
        return export_output_lib.ClassificationOutput(*tensors)
    if isinstance(export_output, export_output_lib.RegressionOutput):
        return export_output_lib.RegressionOutput(*tensors)
    return export_output_lib.PredictOutput(dict(zip(export_output.outputs, tensors)))


def _call_rewritten_for_tpu_inference(call_model_fn):
    """Builds model_fn as TPU inference: `TPUPartitionedCall` of a `tpu.rewrite` function.

    Runs in the default (export) graph. model_fn is traced once, inside
    `tf.compat.v1.tpu.rewrite` inside a graph function; its variables are created in the
    export graph (TF1 names, CPU) and reach the function as captured resource handles, as
    the original's `Defun(capture_resource_var_by_value=False)` did. The function returns
    the predictions and the export outputs' tensors (None entries left out); the spec's
    `scaffold_fn` is called afterwards, in the export graph.

    Args:
      call_model_fn: no-argument fn calling the user's model_fn in PREDICT mode.

    Returns:
      (an `_InferenceSpec` whose tensors are outputs of the `TPUPartitionedCall`, the
      name of the TPU function in the graph's function library).
    """
    traced = {}

    def tpu_computation():
        # As the original's TPU inference: TPU embedding columns look up on the host
        # (outside_compilation) inside a TPU inference context.
        with tf_tpu.inference_context():
            spec = call_model_fn()
        export_outputs = export_output_lib.get_export_outputs(
            spec.export_outputs, spec.predictions)
        predictions = spec.predictions
        if not isinstance(predictions, dict):
            predictions = {_PREDICTIONS_TENSOR_KEY: predictions}
        output_tensors = {k: _export_output_tensors(v) for k, v in export_outputs.items()}
        traced.update(spec=spec, export_outputs=export_outputs, predictions=predictions,
                      output_tensors=output_tensors)
        flat = tf.nest.flatten(predictions) + tf.nest.flatten(output_tensors)
        return [t for t in flat if t is not None]

    def create_in_export_graph(next_creator, **kwargs):
        del next_creator  # tf.function's own creator would make function-local variables.
        with tf.init_scope():
            return tf.compat.v1.Variable(
                **{k: v for k, v in kwargs.items() if k in _V1_VARIABLE_ARGS})

    @tf.function(autograph=False)
    def tpu_fn():
        with tf.variable_creator_scope(create_in_export_graph):
            return tf.compat.v1.tpu.rewrite(tpu_computation)

    function = lookup_tables.tpu_export_explained(tpu_fn.get_concrete_function)
    function.add_to_graph()
    outputs = tf.raw_ops.TPUPartitionedCall(
        args=function.captured_inputs, device_ordinal=tf.raw_ops.TPUOrdinalSelector(),
        Tout=[t.dtype for t in function.outputs], f=function)
    for cpu_tensor, tpu_tensor in zip(outputs, function.outputs):
        cpu_tensor.set_shape(tpu_tensor.shape)
    spec = _unflatten_inference_outputs(traced, list(outputs))
    return spec, function.function_def.signature.name


def _unflatten_inference_outputs(traced, outputs):
    """Puts the `TPUPartitionedCall` outputs back into predictions and export outputs."""
    flat_predictions = tf.nest.flatten(traced["predictions"])
    predictions = tf.nest.pack_sequence_as(traced["predictions"],
                                           outputs[:len(flat_predictions)])
    remaining = iter(outputs[len(flat_predictions):])
    flat_outputs = [None if t is None else next(remaining)
                    for t in tf.nest.flatten(traced["output_tensors"])]
    output_tensors = tf.nest.pack_sequence_as(traced["output_tensors"], flat_outputs)
    export_outputs = {k: _with_tensors(v, output_tensors[k])
                      for k, v in traced["export_outputs"].items()}
    if list(predictions) == [_PREDICTIONS_TENSOR_KEY]:
        predictions = predictions[_PREDICTIONS_TENSOR_KEY]
    spec = traced["spec"]
    scaffold = None
    if isinstance(spec, spec_lib.TPUEstimatorSpec) and spec.scaffold_fn:
        scaffold = spec_lib.call_scaffold_fn(spec.scaffold_fn)
    return _InferenceSpec(predictions, export_outputs, scaffold)


def _add_function_alias(export_dir, tags, function_name, as_text):
    """Records `function_name` as `tpu_func` in the MetaGraph tagged `tags`."""
    name = tf.saved_model.SAVED_MODEL_FILENAME_PBTXT if as_text else (
        tf.saved_model.SAVED_MODEL_FILENAME_PB)
    path = os.path.join(export_dir, os.fsencode(name))
    saved_model = tf_training.SavedModel()
    if as_text:
        text_format.Parse(tf.io.gfile.GFile(path, "r").read(), saved_model)
    else:
        saved_model.ParseFromString(tf.io.gfile.GFile(path, "rb").read())
    for meta_graph in saved_model.meta_graphs:
        if sorted(meta_graph.meta_info_def.tags) == sorted(tags):
            meta_graph.meta_info_def.function_aliases[function_name] = _TPU_FUNCTION_ALIAS
    with tf.io.gfile.GFile(path, "w" if as_text else "wb") as f:
        f.write(str(saved_model) if as_text else
                saved_model.SerializeToString(deterministic=True))


def _copy_assets_extra(export_dir, assets_extra):
    """Copies `{dest relative path: source path}` under `export_dir/assets.extra/`."""
    for dest_relative, source in (assets_extra or {}).items():
        dest = os.path.join(export_dir, b"assets.extra", os.fsencode(dest_relative))
        tf.io.gfile.makedirs(os.path.dirname(dest))
        tf.io.gfile.copy(source, dest, overwrite=True)
