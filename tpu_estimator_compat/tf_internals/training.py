"""tf.compat.v1.train internals: SessionRunHooks' and Savers' private state, TF1 checkpoint
and SavedModel protos, moving averages, TF2 summary writers built in TF1 code."""
import contextlib

from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.ops import summary_ops_v2
from tensorflow.python.training import basic_session_run_hooks
from tensorflow.python.training import checkpoint_state_pb2
from tensorflow.python.ops import variables
from tensorflow.python.training import moving_averages
from tensorflow.python.training import saver
from tensorflow.python.training.saving import saveable_object_util

from tpu_estimator_compat.tf_internals._symbols import Symbol, uses

_HOOKS = "tensorflow.python.training.basic_session_run_hooks"
_SAVER = "tensorflow.python.training.saver"
SYMBOLS = uses(
    Symbol(_HOOKS, "_as_graph_element",
           "LoggingTensorHook takes variables (`{'step': get_global_step()}`) in begin()"),
    *(Symbol(_HOOKS, f"CheckpointSaverHook.{field}",
             "a user's CheckpointSaverHook saves where, when and with the listeners it was "
             "given", per_instance=True)
      for field in ("_checkpoint_dir", "_save_path", "_saver", "_listeners", "_timer")),
    Symbol(_SAVER, "Saver",
           "tf-slim's assign_from_checkpoint_fn builds this module's Saver (not "
           "tf.compat.v1.train's): replaced by RecordedSaver where model and hook code runs"),
    *(Symbol(_SAVER, f"Saver.{field}",
             "a user's Saver in a CheckpointSaverHook keeps the checkpoints it was told to",
             per_instance=True)
      for field in ("_max_to_keep", "_keep_checkpoint_every_n_hours")),
    Symbol(_SAVER, "Saver._var_list",
           "export checks that what a Scaffold's Saver restores fits the checkpoint "
           "(export/preflight.py)", per_instance=True),
    *(Symbol("tensorflow.python.training.optimizer", f"Optimizer.{method}",
             "tf.contrib.opt's AdamW/MomentumW decay each variable inside the base "
             "optimizer's update: rebuilt_apis/weight_decay.py overrides the v1 Optimizer's "
             "methods 'to be implemented by subclasses' and calls the base's")
      for method in ("_prepare", "_apply_dense", "_resource_apply_dense",
                     "_apply_sparse_duplicate_indices",
                     "_resource_apply_sparse_duplicate_indices")),
    Symbol("tensorflow.python.training.optimizer", "Optimizer._use_locking",
           "as Optimizer._prepare: the decay takes the optimizer's `use_locking`",
           per_instance=True),
    Symbol(_HOOKS, "SecondOrStepTimer._every_steps",
           "a user's CheckpointSaverHook(save_steps=N) with use_tpu=False saves at the steps "
           "TF1 saved at (loops end there)", per_instance=True),
    Symbol("tensorflow.python.training.checkpoint_state_pb2", "CheckpointState",
           "the TF1 `checkpoint` file (all_model_checkpoint_paths, timestamps)"),
    Symbol("tensorflow.core.protobuf.saved_model_pb2", "SavedModel",
           "a SavedModel with a CPU and a TPU MetaGraph in one saved_model.pb"),
    Symbol("tensorflow.python.training.moving_averages", "assign_moving_average",
           "tf.contrib.layers.batch_norm's moving mean and variance updates"),
    Symbol("tensorflow.python.training.saving.saveable_object_util", "op_list_to_dict",
           "tf.contrib.opt's MovingAverageOptimizer.swapping_saver maps a var_list by name"),
    Symbol("tensorflow.python.ops.variables", "PartitionedVariable",
           "tf.contrib.opt's swapping_saver takes partitioned variables"),
    Symbol("tensorflow.python.ops.variables", "Variable._get_save_slice_info",
           "a part of a partitioned variable (get_variable(partitioner=...)) is saved as "
           "its slice of the full variable, as TF1's Saver saved it"),
    Symbol("tensorflow.python.ops.summary_ops_v2", "_ResourceSummaryWriter",
           "a TF2 summary writer made in model_fn lives as long as the step and its init() "
           "is an op (tf1_behaviour/patches.py replaces two methods while model_fn runs)"),
)

CheckpointState = checkpoint_state_pb2.CheckpointState
SavedModel = saved_model_pb2.SavedModel
assign_moving_average = moving_averages.assign_moving_average
op_list_to_dict = saveable_object_util.op_list_to_dict
PartitionedVariable = variables.PartitionedVariable
saver_module = saver
ResourceSummaryWriter = summary_ops_v2._ResourceSummaryWriter  # pylint: disable=protected-access


@contextlib.contextmanager
def hooks_graph_element_check(replacement):
    """Within the block, SessionRunHooks check their fetches with `replacement(original)`
    (a function of the object, given TensorFlow's check); without the private check (a
    TensorFlow that changed it) nothing changes."""
    original = getattr(basic_session_run_hooks, "_as_graph_element", None)
    if original is None:
        yield
        return
    # pylint: disable=protected-access
    basic_session_run_hooks._as_graph_element = replacement(original)
    try:
        yield
    finally:
        basic_session_run_hooks._as_graph_element = original


def checkpoint_saver_hook_fields(hook):
    """A CheckpointSaverHook's (directory, save path, saver or None, listeners, timer)."""
    # pylint: disable=protected-access
    return (hook._checkpoint_dir, hook._save_path, hook._saver, list(hook._listeners),
            hook._timer)


def timer_every_steps(timer):
    """A SecondOrStepTimer's step interval, or None (a time-based timer)."""
    return getattr(timer, "_every_steps", None)


def saver_var_list(saver):
    """What `saver` (a `tf.compat.v1.train.Saver`) was given to save: a list, a dict by
    checkpoint name, or None (every global variable)."""
    return getattr(saver, "_var_list", None)


def saver_retention(saver, default_max_to_keep, default_every_n_hours):
    """A Saver's (max_to_keep, keep_checkpoint_every_n_hours); the defaults without one."""
    return (getattr(saver, "_max_to_keep", default_max_to_keep),
            getattr(saver, "_keep_checkpoint_every_n_hours", default_every_n_hours))


def save_slice_info(variable):
    """`(full_name, spec)` of a part of a partitioned variable: the TF1 name of the whole
    variable and the slice spec (`"10 4 0,5:0,4"`) SaveV2/RestoreV2 take; None for a whole
    variable."""
    get = getattr(variable, "_get_save_slice_info", None)
    info = get() if get is not None else None
    return None if info is None else (info.full_name, info.spec)
