"""`RunConfig`: where and how an Estimator / TPUEstimator runs, validated when built.

Pure Python plus `tf.train.ClusterSpec` / `ConfigProto`: nothing here is traced. The cluster
facts come from `TF_CONFIG` (tf_config.py), the TPU part from a `TPUConfig` (tpu_config.py).
"""
import contextlib
import copy
import inspect
import os

import tensorflow as tf

from tpu_estimator_compat.config import tf_config as tf_config_lib
from tpu_estimator_compat.config.tpu_config import TPUConfig


class _UseDefault:
    """Marks an argument that was not given (None has a meaning of its own)."""

    def __repr__(self):
        return "<default>"


_USE_DEFAULT = _UseDefault()
_DEFAULT_SEED = [None]  # the runner's --seed: the tf_random_seed of a RunConfig given none
_SAVE_CKPT_ERR = ("`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set. "
                  "Set one of them and pass None for the other (both None disables "
                  "checkpoints).")


@contextlib.contextmanager
def default_tf_random_seed(seed):
    """Within the block, a RunConfig built with `tf_random_seed=None` (the default) gets
    `seed`: `run --seed`, reproducible runs of a legacy program that sets no seed."""
    previous, _DEFAULT_SEED[0] = _DEFAULT_SEED[0], seed
    try:
        yield
    finally:
        _DEFAULT_SEED[0] = previous


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


def path_to_str(path):
    """A PathLike as its string; anything else unchanged."""
    return os.fspath(path) if hasattr(path, "__fspath__") else path


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
        facts = tf_config_lib.parse_tf_config(tf_config_lib.load_tf_config())
        self._facts = facts
        self._tpu_config = TPUConfig() if tpu_config is None else tpu_config
        self._model_dir = tf_config_lib.reconcile_model_dir(path_to_str(model_dir), facts.model_dir)
        self._tf_random_seed = _DEFAULT_SEED[0] if tf_random_seed is None else tf_random_seed
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

    @property
    def model_dir(self):
        """The `model_dir` this config was given."""
        return self._model_dir

    @property
    def tf_random_seed(self):
        """The `tf_random_seed` this config was given."""
        return self._tf_random_seed

    @property
    def save_summary_steps(self):
        """The `save_summary_steps` this config was given."""
        return self._save_summary_steps

    @property
    def save_checkpoints_steps(self):
        """The `save_checkpoints_steps` this config was given."""
        return self._save_checkpoints_steps

    @property
    def save_checkpoints_secs(self):
        """The `save_checkpoints_secs` this config was given."""
        return self._save_checkpoints_secs

    @property
    def keep_checkpoint_max(self):
        """The `keep_checkpoint_max` this config was given."""
        return self._keep_checkpoint_max

    @property
    def keep_checkpoint_every_n_hours(self):
        """The `keep_checkpoint_every_n_hours` this config was given."""
        return self._keep_checkpoint_every_n_hours

    @property
    def log_step_count_steps(self):
        """The `log_step_count_steps` this config was given."""
        return self._log_step_count_steps

    @property
    def train_distribute(self):
        """The `train_distribute` this config was given."""
        return self._train_distribute

    @property
    def device_fn(self):
        """The `device_fn` this config was given."""
        return self._device_fn

    @property
    def protocol(self):
        """The `protocol` this config was given."""
        return self._protocol

    @property
    def eval_distribute(self):
        """The `eval_distribute` this config was given."""
        return self._eval_distribute

    @property
    def experimental_distribute(self):
        """The `experimental_distribute` this config was given."""
        return self._experimental_distribute

    @property
    def experimental_max_worker_delay_secs(self):
        """The `experimental_max_worker_delay_secs` this config was given."""
        return self._experimental_max_worker_delay_secs

    @property
    def session_creation_timeout_secs(self):
        """The `session_creation_timeout_secs` this config was given."""
        return self._session_creation_timeout_secs

    @property
    def checkpoint_save_graph_def(self):
        """The `checkpoint_save_graph_def` this config was given."""
        return self._checkpoint_save_graph_def

    @property
    def tpu_config(self):
        """The `tpu_config` this config was given."""
        return self._tpu_config

    @property
    def cluster(self):
        """The `cluster` this config was given."""
        return self._cluster

    @property
    def task_type(self):
        """This task's type from TF_CONFIG ('worker' when unset)."""
        return self._facts.task_type

    @property
    def task_id(self):
        """This task's index within its type (0 when unset)."""
        return self._facts.task_id

    @property
    def is_chief(self):
        """Whether this task is the chief (worker 0 when there is no chief)."""
        return self._facts.is_chief

    @property
    def num_worker_replicas(self):
        """Chief plus worker tasks (1 when unset)."""
        return self._facts.num_worker_replicas

    @property
    def num_ps_replicas(self):
        """Parameter-server tasks (0 when unset)."""
        return self._facts.num_ps_replicas

    @property
    def global_id_in_cluster(self):
        """This task's id among all tasks: chief 0, ps last."""
        return self._facts.global_id_in_cluster

    @property
    def service(self):
        """TF_CONFIG['service'], or None."""
        return self._facts.service

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
                value = path_to_str(value)
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


def writes_model_dir(config):
    """Whether this task writes into model_dir: the chief (checkpoints, summaries, exports),
    or train_and_evaluate's `evaluator` task (evaluation events and exports)."""
    return config.is_chief or config.task_type == "evaluator"


def local_session_config(config):
    """`session_config` for an in-process `Session` (export): the given or default
    `ConfigProto`, without asking the cluster resolver for the cluster it does not use."""
    if isinstance(config, RunConfig):
        return config._session_config  # pylint: disable=protected-access
    return getattr(config, "session_config", None)


def cluster_spec_for(config, use_tpu):
    """`config.cluster_spec`, except that with `use_tpu=False` a `cluster` resolver (a TPU's)
    is not asked: TF_CONFIG's cluster alone."""
    if use_tpu or not isinstance(config, RunConfig) or config.cluster is None:
        return config.cluster_spec
    return config._facts.cluster_spec  # pylint: disable=protected-access
