"""The `TF_CONFIG` environment variable: the cluster this process belongs to.

Read once, when a config object is built; `parse_tf_config` is pure (a dict in, facts out).
"""
import collections
import json
import os

import tensorflow as tf

from tpu_estimator_compat import log as logging

_TF_CONFIG_ENV = "TF_CONFIG"
_LOCAL_MASTER = ""
_GRPC_SCHEME = "grpc://"


def load_tf_config():
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


def tpu_job_name_from_tf_config():
    service = load_tf_config().get("service") or {}
    job_name = service.get("tpu_worker_job_name") if isinstance(service, dict) else None
    if job_name:
        logging.info("Load TPU job name from TF_CONFIG: %s", job_name)
    return job_name


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


def reconcile_model_dir(model_dir, tf_config_model_dir):
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

