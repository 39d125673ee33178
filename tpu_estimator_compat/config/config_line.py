"""The `Using config: {...}` line an estimator logs when it is built, in the original's format
(TF1 logged `str(vars(config))`: its fields as `'_name': value` in this order), the line users
read to confirm their configuration.

Two differences from reading the original's object, both to keep construction free of side
effects: a cluster resolver is not asked for its master or cluster spec before the estimator
first runs (TF_CONFIG's values are shown until then), and `_session_config` shows the
`ConfigProto` the original put there when none was given.
"""
import tensorflow as tf

_FIELDS = (
    "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
    "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute", "device_fn",
    "protocol", "eval_distribute", "experimental_distribute",
    "experimental_max_worker_delay_secs", "session_creation_timeout_secs",
    "checkpoint_save_graph_def", "service", "cluster_spec", "task_type", "task_id",
    "global_id_in_cluster", "master", "evaluation_master", "is_chief", "num_ps_replicas",
    "num_worker_replicas")
_ASK_THE_RESOLVER = ("cluster_spec", "master", "evaluation_master")


def default_session_config():
    """The `ConfigProto` the original's RunConfig held when given none."""
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    rewrite_options = config.graph_options.rewrite_options
    rewrite_options.meta_optimizer_iterations = rewrite_options.ONE
    return config


def using_config(config, tpu_estimator):
    """The text after `Using config: ` for `config` (a `RunConfig`) of a TPUEstimator
    (`tpu_estimator`: `_log_step_count_steps` None, as it set it, then `_tpu_config` and
    `_cluster`) or an Estimator."""
    # pylint: disable=protected-access  (the values as given, before any resolver call)
    fields = {"_" + name: getattr(config, name) for name in _FIELDS
              if name not in _ASK_THE_RESOLVER and name != "session_config"}
    fields["_session_config"] = config._session_config or default_session_config()
    if config.cluster is None:
        fields.update({"_" + name: getattr(config, name) for name in _ASK_THE_RESOLVER})
    else:  # not asked before the first run
        facts = config._facts
        fields["_cluster_spec"] = config._resolved_cluster_spec or facts.cluster_spec
        fields["_master"] = config._master if config._master is not None else facts.master
        fields["_evaluation_master"] = (config._evaluation_master or facts.evaluation_master
                                        or fields["_master"])
    fields = {"_" + name: fields["_" + name] for name in _FIELDS}  # the original's order
    if tpu_estimator:
        fields["_log_step_count_steps"] = None
        fields["_tpu_config"] = config.tpu_config
        fields["_cluster"] = config.cluster
    return str(fields)
