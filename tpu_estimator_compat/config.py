"""Run configuration: `InputPipelineConfig`, `TPUConfig`, `RunConfig` and their parsing.

Pure Python plus `tf.train.ClusterSpec` / `ConfigProto`: nothing here is traced. The
`TF_CONFIG` environment variable is read once, when a config object is built.
"""
import collections
import copy
import inspect
import json
import os
import re
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from tpu_estimator_compat import log as logging

_TF_CONFIG_ENV = "TF_CONFIG"


class _UseDefault:
    """Marks an argument that was not given (None has a meaning of its own)."""

    def __repr__(self):
        return "<default>"


_USE_DEFAULT = _UseDefault()
_LOCAL_MASTER = ""
_GRPC_SCHEME = "grpc://"
_VALID_NUM_CORES_PER_REPLICA = (1, 2, 4, 8, 16, 32, 64, 128)
_SAVE_CKPT_ERR = ("`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set. "
                  "Set one of them and pass None for the other (both None disables "
                  "checkpoints).")


class InputPipelineConfig:
    """How `input_fn` is deployed; see the `per_host_input_for_training` arg of `TPUConfig`."""
    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5


_INPUT_MODES = (1, 2, 3, 4, 5)

# --------------------------------------------------------------------------------------
# iterations_per_loop
# --------------------------------------------------------------------------------------

IterationsPerLoop = collections.namedtuple("IterationsPerLoop", ["value", "unit"])
IterationsPerLoop.__doc__ = """A parsed `iterations_per_loop`: `unit` is 'count' or 'seconds'."""

_ITERATIONS_PER_LOOP_RE = re.compile(r"(?P<value>[1-9]\d*)(?P<suffix>[smh]?)")
_SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600}


def parse_iterations_per_loop(value):
    """Parses `TPUConfig.iterations_per_loop`.

    Args:
      value: a positive int (a step count), or a string `'<N>s'`, `'<N>m'` or `'<N>h'`
        (a time budget per device loop). Digit strings such as `'10'` count steps.

    Returns:
      An `IterationsPerLoop(value, unit)`: `unit` is `'count'`, or `'seconds'` with the
      time normalised to seconds.

    Raises:
      ValueError: if `value` has neither form.
    """
    match = None if isinstance(value, bool) else _ITERATIONS_PER_LOOP_RE.fullmatch(str(value))
    if match is None:
        raise ValueError(
            "Invalid TPUConfig `iterations_per_loop` value. Value must be positive integer "
            "value or time-based value `<N><s|m|h>` where <N> is any positive integer and "
            "`s`, `m`, `h` are unit of time in seconds, minutes, hours respectively. "
            f"Examples of valid values: `3600s`, `60m`, `1h`. Got: {value!r}.")
    suffix = match.group("suffix")
    number = int(match.group("value"))
    if not suffix:
        return IterationsPerLoop(number, "count")
    return IterationsPerLoop(number * _SECONDS_PER_UNIT[suffix], "seconds")


def _check_positive_integer(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be int, got {type(value)}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")


# --------------------------------------------------------------------------------------
# TPUConfig
# --------------------------------------------------------------------------------------

def _load_tf_config():
    """The `TF_CONFIG` environment variable as a dict (`{}` when unset)."""
    raw = os.environ.get(_TF_CONFIG_ENV, "")
    if not raw.strip():
        return {}
    try:
        tf_config = json.loads(raw)
    except ValueError as e:
        raise ValueError(
            f"The TF_CONFIG environment variable is not valid JSON ({e}): {raw!r}. "
            "Fix it or unset it.") from e
    if not isinstance(tf_config, dict):
        raise ValueError(
            f"The TF_CONFIG environment variable must hold a JSON object, got {raw!r}.")
    return tf_config


def _tpu_job_name_from_tf_config():
    service = _load_tf_config().get("service") or {}
    job_name = service.get("tpu_worker_job_name") if isinstance(service, dict) else None
    if job_name:
        logging.info("Load TPU job name from TF_CONFIG: %s", job_name)
    return job_name


def _normalize_input_mode(per_host_input_for_training):
    # The legacy booleans must be mapped before any comparison: True == 1 in Python.
    if per_host_input_for_training is False:
        return InputPipelineConfig.PER_SHARD_V1
    if per_host_input_for_training is True:
        return InputPipelineConfig.PER_HOST_V1
    if per_host_input_for_training not in _INPUT_MODES:
        raise ValueError(
            "per_host_input_for_training must be True, False or an InputPipelineConfig value "
            f"(PER_SHARD_V1=1 ... SLICED=5); got {per_host_input_for_training!r}")
    return per_host_input_for_training


class TPUConfig(collections.namedtuple("TPUConfig", [
        "iterations_per_loop",
        "num_shards",
        "num_cores_per_replica",
        "per_host_input_for_training",
        "tpu_job_name",
        "initial_infeed_sleep_secs",
        "input_partition_dims",
        "eval_training_input_configuration",
        "experimental_host_call_every_n_steps",
        "experimental_allow_per_host_v2_parallel_get_next",
        "experimental_feed_hook",
])):
    """TPU-related configuration of a `TPUEstimator` (a validated namedtuple).

    Args:
      iterations_per_loop: train steps per device loop (one host round-trip), or a time
        budget `'<N>s|m|h'`; see `parse_iterations_per_loop`. Not used by evaluation.
      num_shards: deprecated; if set, must equal the real number of replicas.
      num_cores_per_replica: cores per model replica (model parallelism), one of 1, 2, 4,
        ..., 128; `None` disables model parallelism.
      per_host_input_for_training: an `InputPipelineConfig` value; the legacy `True`/`False`
        become `PER_HOST_V1`/`PER_SHARD_V1`.
      tpu_job_name: job name for TPU placement; defaults to
        `TF_CONFIG['service']['tpu_worker_job_name']`.
      initial_infeed_sleep_secs: seconds to wait before the first batch is fed.
      input_partition_dims: `[feature_dims]` or `[feature_dims, label_dims]` for spatial
        partitioning (PER_HOST_V2 with `num_cores_per_replica` only).
      eval_training_input_configuration: `PER_HOST_V1` or `SLICED`, for EVAL and PREDICT.
      experimental_host_call_every_n_steps: run `host_call` every n steps of a train loop.
      experimental_allow_per_host_v2_parallel_get_next: PER_HOST_V2 may fetch in parallel.
      experimental_feed_hook: a replacement infeed/outfeed hook class (kept, unused).

    Raises:
      ValueError, TypeError: on an invalid value, with the original TPUConfig messages.
    """

    __slots__ = ()

    def __new__(cls,
                iterations_per_loop=2,
                num_shards=None,
                num_cores_per_replica=None,
                per_host_input_for_training=True,
                tpu_job_name=None,
                initial_infeed_sleep_secs=None,
                input_partition_dims=None,
                eval_training_input_configuration=InputPipelineConfig.PER_HOST_V1,
                experimental_host_call_every_n_steps=1,
                experimental_allow_per_host_v2_parallel_get_next=False,
                experimental_feed_hook=None):
        parse_iterations_per_loop(iterations_per_loop)
        if num_shards is not None:
            _check_positive_integer(num_shards, "TPUConfig num_shards")
        per_host_input_for_training = _normalize_input_mode(per_host_input_for_training)
        _validate_input_partition_dims(
            input_partition_dims, per_host_input_for_training, num_cores_per_replica)
        if num_cores_per_replica is not None and (
                isinstance(num_cores_per_replica, bool)
                or num_cores_per_replica not in _VALID_NUM_CORES_PER_REPLICA):
            raise ValueError("num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; "
                             f"got {num_cores_per_replica}")
        if (isinstance(eval_training_input_configuration, bool)
                or eval_training_input_configuration not in (InputPipelineConfig.PER_HOST_V1,
                                                             InputPipelineConfig.SLICED)):
            raise ValueError("eval_training_input_configuration must be PER_HOST_V1 or SLICED;"
                             f" got {eval_training_input_configuration}")
        if initial_infeed_sleep_secs:
            _check_positive_integer(initial_infeed_sleep_secs,
                                    "TPUConfig initial_infeed_sleep_secs")
        _check_positive_integer(experimental_host_call_every_n_steps,
                                "TPUConfig experimental_host_call_every_n_steps")
        return super().__new__(
            cls,
            iterations_per_loop=iterations_per_loop,
            num_shards=num_shards,
            num_cores_per_replica=num_cores_per_replica,
            per_host_input_for_training=per_host_input_for_training,
            tpu_job_name=tpu_job_name or _tpu_job_name_from_tf_config(),
            initial_infeed_sleep_secs=initial_infeed_sleep_secs,
            input_partition_dims=input_partition_dims,
            eval_training_input_configuration=eval_training_input_configuration,
            experimental_host_call_every_n_steps=experimental_host_call_every_n_steps,
            experimental_allow_per_host_v2_parallel_get_next=(
                experimental_allow_per_host_v2_parallel_get_next),
            experimental_feed_hook=experimental_feed_hook)

    def _replace(self, **kwargs):
        """A new, re-validated `TPUConfig` with some fields replaced."""
        return type(self)(**{**self._asdict(), **kwargs})


def _validate_input_partition_dims(dims, input_mode, num_cores_per_replica):
    if dims is None:
        return
    if not isinstance(dims, (list, tuple)) or len(dims) not in (1, 2):
        raise ValueError("input_partition_dims must be a list/tuple with one or two elements.")
    if input_mode != InputPipelineConfig.PER_HOST_V2:
        raise ValueError("input_partition_dims is only supported in PER_HOST_V2 mode.")
    if num_cores_per_replica is None:
        raise ValueError("input_partition_dims requires setting num_cores_per_replica.")


# --------------------------------------------------------------------------------------
# TF_CONFIG: the cluster this process belongs to
# --------------------------------------------------------------------------------------

ClusterFacts = collections.namedtuple("ClusterFacts", [
    "cluster_spec", "task_type", "task_id", "is_chief", "num_worker_replicas",
    "num_ps_replicas", "global_id_in_cluster", "service", "master", "evaluation_master",
    "model_dir"])
ClusterFacts.__doc__ = "What a `TF_CONFIG` dict says about this process (`parse_tf_config`)."


def parse_tf_config(tf_config):
    """Reads the cluster facts out of a `TF_CONFIG` dict, as the original RunConfig did.

    With no `cluster`: a single local worker (task 'worker' 0, chief). With a cluster, the
    chief is the 'chief' task, else the legacy 'master' task, else worker 0 (as in
    `MultiWorkerMirroredStrategy`); an 'evaluator' task is outside the training cluster.

    Args:
      tf_config: the decoded `TF_CONFIG` JSON object.

    Returns:
      A `ClusterFacts`.

    Raises:
      ValueError, TypeError: if `tf_config` is inconsistent (messages of the original).
    """
    service = tf_config.get("service")
    if service is not None and not isinstance(service, dict):
        raise TypeError(
            f'If "service" is set in TF_CONFIG, it must be a dict. Given {type(service)}')
    model_dir = tf_config.get("model_dir")
    if model_dir == "":
        raise ValueError("model_dir in TF_CONFIG should be non-empty.")
    cluster_spec = tf.train.ClusterSpec(tf_config.get("cluster") or {})
    task_env = tf_config.get("task") or {}
    if not cluster_spec.jobs:
        return _local_facts(cluster_spec, task_env, tf_config, service, model_dir)
    chief_type = _chief_task_type(cluster_spec)
    task_type, task_id = _validated_task(cluster_spec, task_env, chief_type)
    evaluation_master = (tf_config.get("eval_session_master", _LOCAL_MASTER)
                         if task_type == "evaluator" else _LOCAL_MASTER)
    if task_type == "evaluator":
        return ClusterFacts(
            tf.train.ClusterSpec({}), task_type, task_id, False, 0, 0, None, service,
            _LOCAL_MASTER, evaluation_master, model_dir)
    jobs = cluster_spec.as_dict()
    chief_jobs = [chief_type] if chief_type else []
    return ClusterFacts(
        cluster_spec=cluster_spec,
        task_type=task_type,
        task_id=task_id,
        is_chief=(task_type == chief_type if chief_type
                  else (task_type, task_id) == ("worker", 0)),
        num_worker_replicas=sum(len(jobs.get(job, [])) for job in ["worker"] + chief_jobs),
        num_ps_replicas=len(jobs.get("ps", [])),
        global_id_in_cluster=_global_id(cluster_spec, task_type, task_id, chief_type),
        service=service,
        master=_session_master(cluster_spec, task_type, task_id, tf_config),
        evaluation_master=evaluation_master,
        model_dir=model_dir)


def _local_facts(cluster_spec, task_env, tf_config, service, model_dir):
    task_type = task_env.get("type", "worker")
    task_id = int(task_env.get("index", 0))
    if task_type != "worker":
        raise ValueError('If "cluster" is not set in TF_CONFIG, task type must be WORKER.')
    if task_id != 0:
        raise ValueError('If "cluster" is not set in TF_CONFIG, task index must be 0.')
    return ClusterFacts(
        cluster_spec, task_type, task_id, True, 1, 0, 0, service,
        tf_config.get("session_master", _LOCAL_MASTER),
        tf_config.get("eval_session_master", _LOCAL_MASTER), model_dir)


def _chief_task_type(cluster_spec):
    jobs = cluster_spec.jobs
    if "master" in jobs and "chief" in jobs:
        raise ValueError("If `master` node exists in `cluster`, job `chief` is not supported.")
    chief_type = "chief" if "chief" in jobs else ("master" if "master" in jobs else None)
    if chief_type and cluster_spec.num_tasks(chief_type) > 1:
        raise ValueError(f'The "cluster" in TF_CONFIG must have only one "{chief_type}" node.')
    return chief_type


def _validated_task(cluster_spec, task_env, chief_type):
    task_type = task_env.get("type")
    task_id = task_env.get("index")
    if not task_type:
        raise ValueError('If "cluster" is set in TF_CONFIG, task type must be set.')
    if task_id is None:
        raise ValueError('If "cluster" is set in TF_CONFIG, task index must be set.')
    task_id = int(task_id)
    if task_id < 0:
        raise ValueError("Task index must be non-negative number.")
    if task_type == "evaluator":
        if chief_type == "master":
            raise ValueError(
                "If `master` node exists in `cluster`, task_type `evaluator` is not supported.")
        return task_type, task_id
    note = "Note that these values may be coming from the TF_CONFIG environment variable."
    if task_type not in cluster_spec.jobs:
        raise ValueError(f"{task_type} is not a valid task_type in the cluster_spec:\n"
                         f"{cluster_spec}\n\n{note}")
    if task_id not in cluster_spec.task_indices(task_type):
        raise ValueError(f"{task_id} is not a valid task_id for task_type {task_type} in the "
                         f"cluster_spec:\n{cluster_spec}\n\n{note}")
    return task_type, task_id


def _global_id(cluster_spec, task_type, task_id, chief_type):
    # The chief first, then the other jobs alphabetically, parameter servers last.
    others = sorted(job for job in cluster_spec.jobs if job not in (chief_type, "ps"))
    order = ([chief_type] if chief_type else []) + others
    order += ["ps"] if "ps" in cluster_spec.jobs else []
    next_id = 0
    for job in order:
        if job == task_type:
            return next_id + task_id
        next_id += cluster_spec.num_tasks(job)
    raise ValueError(f"task_type {task_type} is not in the cluster_spec {cluster_spec}.")


def _session_master(cluster_spec, task_type, task_id, tf_config):
    if "session_master" in tf_config:
        return tf_config["session_master"]
    jobs = cluster_spec.jobs
    if len(jobs) == 1 and cluster_spec.num_tasks(jobs[0]) == 1:
        return _LOCAL_MASTER
    return _GRPC_SCHEME + cluster_spec.task_address(task_type, task_id)


# --------------------------------------------------------------------------------------
# RunConfig
# --------------------------------------------------------------------------------------

_REPLACEABLE = (
    "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
    "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute", "device_fn",
    "protocol", "eval_distribute", "experimental_distribute",
    "experimental_max_worker_delay_secs", "session_creation_timeout_secs",
    "checkpoint_save_graph_def", "tpu_config")

# Each check runs only when the value is not None: (field, is_valid, message).
_CHECKS = (
    ("model_dir", lambda v: v, "model_dir should be non-empty. Pass a directory path, or None "
                                "for a temporary directory."),
    ("save_summary_steps", lambda v: v >= 0,
     "save_summary_steps should be >= 0 (0 disables summaries)."),
    ("save_checkpoints_steps", lambda v: v >= 0, "save_checkpoints_steps should be >= 0"),
    ("save_checkpoints_secs", lambda v: v >= 0, "save_checkpoints_secs should be >= 0"),
    ("session_config", lambda v: isinstance(v, tf.compat.v1.ConfigProto),
     "session_config must be instance of ConfigProto"),
    ("keep_checkpoint_max", lambda v: v >= 0, "keep_checkpoint_max should be >= 0"),
    ("keep_checkpoint_every_n_hours", lambda v: v > 0,
     "keep_checkpoint_every_n_hours should be > 0"),
    ("log_step_count_steps", lambda v: v > 0,
     "log_step_count_steps should be > 0: pass a positive number of steps, e.g. 100."),
    ("tf_random_seed", lambda v: isinstance(v, int) and not isinstance(v, bool),
     "tf_random_seed must be integer. Pass an int seed, or None for no seed."),
    ("experimental_max_worker_delay_secs", lambda v: isinstance(v, int),
     "experimental_max_worker_delay_secs must be an integer if set."),
    ("session_creation_timeout_secs", lambda v: v > 0,
     "session_creation_timeout_secs should be > 0"),
    ("device_fn", lambda v: callable(v) and _positional_arg_names(v) == ("op",),
     'device_fn must be callable with exactly one argument "op".'),
    ("protocol", lambda v: v in ("grpc", "grpc+verbs"), "protocol should be grpc or grpc+verbs"),
    ("train_distribute", lambda v: isinstance(v, _strategy_types()),
     "train_distribute must be a tf.distribute.Strategy instance."),
    ("eval_distribute", lambda v: isinstance(v, _strategy_types()),
     "eval_distribute must be a tf.distribute.Strategy instance."),
    ("tpu_config", lambda v: isinstance(v, TPUConfig),
     "tpu_config must be a TPUConfig instance."),
)


def _positional_arg_names(fn):
    params = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in params
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _holds(is_valid, value):
    try:
        return bool(is_valid(value))
    except TypeError:  # E.g. comparing a string with 0.
        return False


def _strategy_types():
    return (tf.distribute.Strategy, tf.compat.v1.distribute.Strategy)


def get_default_session_config():
    """The `ConfigProto` Estimator used when `RunConfig.session_config` is None."""
    rewrite = rewriter_config_pb2.RewriterConfig(
        meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE)
    return tf.compat.v1.ConfigProto(
        allow_soft_placement=True,
        graph_options=tf.compat.v1.GraphOptions(rewrite_options=rewrite))


def _path_to_str(path):
    return os.fspath(path) if hasattr(path, "__fspath__") else path


def _resolve_model_dir_with_tf_config(model_dir, tf_config_model_dir):
    if model_dir == "":
        raise ValueError("model_dir should be non-empty. Pass a directory path, or None for "
                         "a temporary directory.")
    if tf_config_model_dir:
        if model_dir and model_dir != tf_config_model_dir:
            raise ValueError(
                "`model_dir` provided in RunConfig construct, if set, must have the same value "
                f"as the model_dir in TF_CONFIG. model_dir: {model_dir}\n"
                f'TF_CONFIG["model_dir"]: {tf_config_model_dir}.\n')
        logging.info("Using model_dir in TF_CONFIG: %s", tf_config_model_dir)
    return model_dir or tf_config_model_dir


def _checkpoint_policy(steps, secs):
    """The (steps, secs) pair after the defaults: 600 s only when neither was given."""
    if steps is _USE_DEFAULT and secs is _USE_DEFAULT:
        return None, 600
    if secs is _USE_DEFAULT:
        return steps, None
    if steps is _USE_DEFAULT:
        return None, secs
    if steps is not None and secs is not None:
        raise ValueError(_SAVE_CKPT_ERR)
    return steps, secs


class RunConfig:
    """Configuration of an Estimator / TPUEstimator run (both RunConfig classes in one).

    Every argument is exposed as a read-only property; so are the cluster facts read from
    `TF_CONFIG` at construction (`cluster_spec`, `task_type`, `task_id`, `is_chief`,
    `num_worker_replicas`, `num_ps_replicas`, `global_id_in_cluster`, `service`).

    Args:
      tpu_config: a `TPUConfig`; defaults to `TPUConfig()`.
      evaluation_master: session target for evaluation; defaults to `master` unless
        `TF_CONFIG` says this task is an evaluator.
      master: session target for training. Cannot be combined with `cluster`.
      cluster: a `ClusterResolver` (any object with `master()` and `cluster_spec()`). It is
        only queried when `master`, `evaluation_master`, `cluster_spec` or `session_config`
        is read, so a TPU resolver is not contacted just by building the config.
      model_dir: where checkpoints and summaries go; `None` lets the estimator choose.
      tf_random_seed: an int graph-level seed, or None.
      save_summary_steps: write summaries every this many steps.
      save_checkpoints_steps: checkpoint every this many steps.
      save_checkpoints_secs: checkpoint every this many seconds; 600 when neither this nor
        `save_checkpoints_steps` is given; both None disables checkpoints.
      session_config: a `tf.compat.v1.ConfigProto` or None.
      keep_checkpoint_max: checkpoints to keep (0 or None keeps all).
      keep_checkpoint_every_n_hours: also keep one checkpoint every this many hours.
      log_step_count_steps: log loss and steps/sec every this many steps.
      train_distribute: a `tf.distribute.Strategy` for training, or None.
      device_fn: a function `op -> device string`, or None.
      protocol: None, 'grpc' or 'grpc+verbs'.
      eval_distribute: a `tf.distribute.Strategy` for evaluation, or None.
      experimental_distribute: kept for compatibility.
      experimental_max_worker_delay_secs: an int, or None.
      session_creation_timeout_secs: seconds to wait for a session.
      checkpoint_save_graph_def: whether checkpoints also save the graph.

    Raises:
      ValueError, TypeError: on an invalid value or an inconsistent `TF_CONFIG`.
    """

    def __init__(self,
                 tpu_config=None,
                 evaluation_master=None,
                 master=None,
                 cluster=None,
                 model_dir=None,
                 tf_random_seed=None,
                 save_summary_steps=100,
                 save_checkpoints_steps=_USE_DEFAULT,
                 save_checkpoints_secs=_USE_DEFAULT,
                 session_config=None,
                 keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000,
                 log_step_count_steps=100,
                 train_distribute=None,
                 device_fn=None,
                 protocol=None,
                 eval_distribute=None,
                 experimental_distribute=None,
                 experimental_max_worker_delay_secs=None,
                 session_creation_timeout_secs=7200,
                 checkpoint_save_graph_def=True):
        steps, secs = _checkpoint_policy(save_checkpoints_steps, save_checkpoints_secs)
        if master is not None and cluster is not None:
            raise ValueError("Both master and cluster are set. Pass `cluster` (a "
                             "ClusterResolver) or `master` (a session target), not both.")
        facts = parse_tf_config(_load_tf_config())
        self._facts = facts
        self._tpu_config = TPUConfig() if tpu_config is None else tpu_config
        self._model_dir = _resolve_model_dir_with_tf_config(_path_to_str(model_dir),
                                                            facts.model_dir)
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = steps
        self._save_checkpoints_secs = secs
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._train_distribute = train_distribute
        self._device_fn = device_fn
        self._protocol = protocol
        self._eval_distribute = eval_distribute
        self._experimental_distribute = experimental_distribute
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        self._session_creation_timeout_secs = session_creation_timeout_secs
        self._checkpoint_save_graph_def = checkpoint_save_graph_def
        self._cluster = cluster
        self._master = master
        self._evaluation_master = evaluation_master
        self._session_config = session_config
        self._validate()
        self._prepare_cluster_session_config()

    def _validate(self):
        for name, is_valid, message in _CHECKS:
            value = getattr(self, "_" + name)
            if value is not None and not _holds(is_valid, value):
                raise ValueError(f"{message} Got: {value!r}.")

    def _prepare_cluster_session_config(self):
        """With a ClusterResolver, session_config defaults and later gets its cluster_def."""
        self._resolved_cluster_spec = None  # Filled on first read, see _resolve_cluster.
        if self._cluster is None:
            return
        if self._session_config is None:
            self._session_config = tf.compat.v1.ConfigProto(
                allow_soft_placement=True, isolate_session_state=True)
        elif self._session_config.HasField("cluster_def"):
            raise ValueError("You cannot provide a ClusterResolver and "
                             "session_config.cluster_def. Drop one of them.")

    def _resolve_cluster(self):
        """Queries the ClusterResolver once: its cluster spec goes into session_config."""
        if self._resolved_cluster_spec is None:
            spec = self._cluster.cluster_spec()
            if spec:
                self._session_config.cluster_def.CopyFrom(spec.as_cluster_def())
            self._resolved_cluster_spec = spec
        return self._resolved_cluster_spec

    @property
    def master(self):
        """The training session target (from `master`, `cluster.master()` or TF_CONFIG)."""
        if self._master is None:
            self._master = (self._cluster.master() if self._cluster is not None
                            else self._facts.master)
        return self._master

    @property
    def evaluation_master(self):
        """The evaluation session target; `master` unless set or this is an evaluator."""
        if self._evaluation_master is not None:
            return self._evaluation_master
        if self._facts.evaluation_master or self._facts.task_type == "evaluator":
            return self._facts.evaluation_master
        return self.master

    @property
    def cluster_spec(self):
        """A `tf.train.ClusterSpec`: the cluster resolver's, else TF_CONFIG's."""
        if self._cluster is not None:
            return self._resolve_cluster()
        return self._facts.cluster_spec

    @property
    def session_config(self):
        """The `ConfigProto`, or None; with a cluster, it carries the cluster_def."""
        if self._cluster is not None:
            self._resolve_cluster()
        return self._session_config

    def replace(self, **kwargs):
        """Returns a new validated `RunConfig` with some properties replaced.

        Setting one of `save_checkpoints_steps` / `save_checkpoints_secs` to a value clears
        the other; setting both to values is an error.

        Raises:
          ValueError: for a property that cannot be replaced, or an invalid value.
        """
        for key in kwargs:
            if key not in _REPLACEABLE:
                raise ValueError(
                    f"Replacing {key} is not supported. Allowed properties are "
                    f"{list(_REPLACEABLE)}. Build a new RunConfig to change {key}.")
        new = copy.copy(self)
        if self._session_config is not None:
            new._session_config = copy.deepcopy(self._session_config)
        for key, value in kwargs.items():
            if key == "model_dir":
                value = _path_to_str(value)
            elif key == "tpu_config" and value is None:
                value = TPUConfig()
            setattr(new, "_" + key, value)
        steps, secs = new._save_checkpoints_steps, new._save_checkpoints_secs
        if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs:
            if steps is not None and secs is not None:
                raise ValueError(_SAVE_CKPT_ERR)
        elif "save_checkpoints_steps" in kwargs and steps is not None:
            new._save_checkpoints_secs = None
        elif "save_checkpoints_secs" in kwargs and secs is not None:
            new._save_checkpoints_steps = None
        new._validate()
        if "session_config" in kwargs:
            new._prepare_cluster_session_config()
        return new

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, '_' + name)!r}" for name in _REPLACEABLE)
        return f"RunConfig({fields}, cluster={self._cluster!r})"


def _stored_property(name, doc):
    return property(lambda self: getattr(self, "_" + name), doc=doc)


def _fact_property(name, doc):
    return property(lambda self: getattr(self._facts, name), doc=doc)


for _name in _REPLACEABLE + ("cluster",):
    if _name not in vars(RunConfig):  # session_config has its own property.
        setattr(RunConfig, _name,
                _stored_property(_name, f"The `{_name}` this config was given."))
for _name, _doc in (
        ("task_type", "This task's type from TF_CONFIG ('worker' when unset)."),
        ("task_id", "This task's index within its type (0 when unset)."),
        ("is_chief", "Whether this task is the chief (worker 0 when there is no chief)."),
        ("num_worker_replicas", "Chief plus worker tasks (1 when unset)."),
        ("num_ps_replicas", "Parameter-server tasks (0 when unset)."),
        ("global_id_in_cluster", "This task's id among all tasks: chief 0, ps last."),
        ("service", "TF_CONFIG['service'], or None.")):
    setattr(RunConfig, _name, _fact_property(_name, _doc))
del _name, _doc


def resolve_model_dir(config, model_dir):
    """Reconciles an estimator's `model_dir` argument with its config, as Estimator did.

    Args:
      config: a `RunConfig`, or None for the default one.
      model_dir: the estimator constructor's `model_dir` (str, PathLike or None).

    Returns:
      A `RunConfig` whose `model_dir` is set: the given one, the config's, or a new
      temporary directory (with a warning) when neither is set.

    Raises:
      ValueError: if both are set and differ.
    """
    if config is None:
        logging.info("Using default config.")
        config = RunConfig()
    if not isinstance(config, RunConfig):
        raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
    model_dir = _path_to_str(model_dir)
    if model_dir is not None and config.model_dir is not None and config.model_dir != model_dir:
        raise ValueError(
            "`model_dir` are set both in constructor and `RunConfig`, but with different "
            f"values. In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' "
            "Pass it in only one place, or the same value in both.")
    if model_dir:
        return config.replace(model_dir=model_dir)
    if config.model_dir is None:
        temp_dir = tempfile.mkdtemp()
        logging.warning("Using temporary folder as model directory: %s", temp_dir)
        return config.replace(model_dir=temp_dir)
    return config
