"""Warm-starting by TF1 name: `WarmStartSettings`, `warm_start` and `init_from_checkpoint`.

The original built initializers in a graph (`tf.compat.v1.train.warm_start`,
`tf.compat.v1.train.init_from_checkpoint`); here the same name-selection and
assignment-map rules are applied eagerly, on the host, to a `{tf1_name: variable}` dict once
the variables exist. Every check runs before anything is assigned, and all tensors are read
in one RestoreV2 op.
"""
import collections
import os
import re

import tensorflow as tf

from tpu_estimator_compat.state import checkpoints

_log = tf.get_logger()


class WarmStartSettings(collections.namedtuple("WarmStartSettings", [
        "ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_vocab_info",
        "var_name_to_prev_var_name"])):
    """What to warm-start from, as `tf.estimator.WarmStartSettings`.

    Args:
      ckpt_to_initialize_from: a checkpoint prefix, a directory holding checkpoints, or a
        SavedModel directory (detected by `variables/variables.index`).
      vars_to_warm_start: a regex string matched (`re.match`, against `name:0` as TF1 did)
        over TRAINABLE variables only; a list of regex strings matched over ALL variables
        (optimizer slots included); a list of variables; or None for none.
      var_name_to_vocab_info: not supported (vocabulary remapping); must be empty.
      var_name_to_prev_var_name: `{current_name: name_in_checkpoint}` for renamed variables.
    """

    def __new__(cls, ckpt_to_initialize_from, vars_to_warm_start=".*",
                var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        if not ckpt_to_initialize_from:
            raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings")
        if var_name_to_vocab_info:
            raise NotImplementedError(
                "WarmStartSettings.var_name_to_vocab_info (vocabulary remapping of "
                f"{sorted(var_name_to_vocab_info)}) is not supported by tpu_estimator_compat. "
                "Remap the embedding rows offline (tf.compat.v1.train.load_variable, reorder, "
                "write a new checkpoint) and warm-start from that checkpoint without vocab info.")
        return super().__new__(cls, ckpt_to_initialize_from, vars_to_warm_start,
                               var_name_to_vocab_info or {}, var_name_to_prev_var_name or {})


def warm_start(named_variables: dict, trainable_names, settings_or_path) -> list:
    """Initializes the selected variables from a checkpoint, as Estimator's `warm_start_from`.

    Runs eagerly on existing variables (distributed ones get every replica's copy set).

    Args:
      named_variables: `{tf1_name: variable}` of the model (optimizer slots included).
      trainable_names: the names in `named_variables` that are trainable.
      settings_or_path: a `WarmStartSettings`; a string path (checkpoint prefix, checkpoint
        directory or SavedModel directory), which warm-starts all TRAINABLE variables; or None.

    Returns:
      The names of the variables warm-started.

    Raises:
      ValueError: a selected variable is missing from the checkpoint or has another shape, or
        `var_name_to_prev_var_name` names a variable that was not selected.
    """
    settings = _as_settings(settings_or_path)
    if settings is None:
        return []
    ckpt = checkpoint_prefix(settings.ckpt_to_initialize_from)
    _log.info("Warm-starting with WarmStartSettings: %s", settings)
    _log.info("Warm-starting from: %s", ckpt)
    selected = _select(named_variables, trainable_names, settings.vars_to_warm_start)
    renames = dict(settings.var_name_to_prev_var_name)
    unused = sorted(set(renames) - set(selected))
    if unused:
        raise ValueError(
            "You provided the following variables in var_name_to_prev_var_name that were not "
            f"used: {unused}.  Perhaps you misspelled them?  Here is the list of viable "
            f"variable names: {selected}")
    pairs = [(renames.get(name, name), name) for name in selected]
    reader = checkpoints.open_reader(ckpt)
    for ckpt_name, name in pairs:
        _check_in_checkpoint(ckpt_name, reader, ckpt)
    _assign(ckpt, reader, pairs, named_variables)
    _log.info("Warm-started %d variables: %s", len(selected), selected)
    return selected


def init_from_checkpoint(ckpt_dir_or_file, assignment_map: dict, named_variables: dict) -> dict:
    """`tf.compat.v1.train.init_from_checkpoint`, applied eagerly to a `{name: variable}` dict.

    `assignment_map` maps checkpoint names to model names, with the TF1 rules:
      * `{'ckpt/name': 'model/name'}` or `{'ckpt/name': variable}`: one variable;
      * `{'old_scope/': 'new_scope/'}`: every model variable under `new_scope/` from the
        same name under `old_scope/` (only variables that exist in `named_variables`; extra
        checkpoint tensors are ignored);
      * `{'/': 'scope/'}`: variables under `scope/` from the checkpoint's root;
        `{'old_scope/': '/'}`: all model variables from under `old_scope/`.

    Pass the variables that existed where the original call happened (for a call in
    model_fn/scaffold_fn before `minimize`, the model's own variables, not optimizer slots).

    Args:
      ckpt_dir_or_file: a checkpoint prefix or a directory (its latest checkpoint).
      assignment_map: as above; values may be names or variable objects.
      named_variables: `{tf1_name: variable}`.

    Returns:
      `{model_name: checkpoint_name}` of the variables initialized.

    Raises:
      ValueError: with TF1's messages, for a name missing from the checkpoint, a value that is
        neither a model variable nor a scope, or a shape mismatch. Nothing is assigned then.
    """
    ckpt = checkpoint_prefix(ckpt_dir_or_file)
    reader = checkpoints.open_reader(ckpt)
    by_id = {id(v): name for name, v in named_variables.items()}
    targets = {}  # model name -> checkpoint name; a later entry wins, as in TF1
    for ckpt_name, current in sorted(assignment_map.items(), key=lambda item: item[0]):
        name = _model_name(current, named_variables, by_id)
        if name is not None:
            _check_in_checkpoint(ckpt_name, reader, ckpt_dir_or_file)
            targets[name] = ckpt_name
        else:
            targets.update(_scope_targets(ckpt_name, current, named_variables, reader,
                                          ckpt_dir_or_file))
    _assign(ckpt, reader, [(c, n) for n, c in targets.items()], named_variables)
    _log.info("Initialized %d variables from checkpoint %s: %s", len(targets), ckpt,
              sorted(targets))
    return targets


def _as_settings(settings_or_path):
    if settings_or_path is None or isinstance(settings_or_path, WarmStartSettings):
        return settings_or_path
    if isinstance(settings_or_path, (str, bytes, os.PathLike)):
        return WarmStartSettings(ckpt_to_initialize_from=settings_or_path)
    raise ValueError("warm_start_from must be a string or a WarmStartSettings, instead got "
                     f"{type(settings_or_path)}")


def checkpoint_prefix(path):
    """The prefix to read: a SavedModel's `variables/variables`, a dir's latest, or `path`.

    Raises:
      checkpoints.CheckpointNotFoundError: nothing at `path`, or a directory without
        checkpoints that is not a SavedModel either.
    """
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode()
    if tf.io.gfile.exists(os.path.join(path, "variables", "variables.index")):
        _log.info("Warm-starting from a SavedModel")
        return os.path.join(path, "variables", "variables")
    if tf.io.gfile.isdir(path) and checkpoints.latest_checkpoint(path) is None:
        raise checkpoints.CheckpointNotFoundError(
            path,
            f"Could not find a checkpoint in {path}: it has no `checkpoint` state file and is not "
            "a SavedModel directory (no variables/variables.index). Pass a checkpoint prefix "
            "such as model_dir/model.ckpt-100, a model_dir, or a SavedModel directory.")
    return checkpoints.resolve_checkpoint_path(path)


def _select(named_variables, trainable_names, vars_to_warm_start):
    """The names `vars_to_warm_start` selects, in `named_variables` order (TF1 rules)."""
    if vars_to_warm_start is None:
        return []
    if isinstance(vars_to_warm_start, str):
        pattern = re.compile(vars_to_warm_start)
        trainable = set(trainable_names)
        return [n for n in named_variables if n in trainable and pattern.match(n + ":0")]
    if isinstance(vars_to_warm_start, (list, tuple)):
        if all(isinstance(v, str) for v in vars_to_warm_start):
            patterns = [re.compile(v) for v in vars_to_warm_start]
            return [n for n in named_variables if any(p.match(n + ":0") for p in patterns)]
        by_id = {id(v): name for name, v in named_variables.items()}
        return [_model_name(v, named_variables, by_id) for v in vars_to_warm_start]
    raise ValueError(
        "`vars_to_warm_start` must be a regex string, a list of regex strings, a list of "
        f"variables, or None; got {vars_to_warm_start!r}.")


def _model_name(current, named_variables, by_id):
    """The model name an assignment-map value denotes, or None for a scope string."""
    if isinstance(current, str):
        return current if current in named_variables else None
    if isinstance(current, (list, tuple)):
        raise TypeError(
            "Lists of variables (partitioned variables) as assignment_map values are not "
            f"supported: got {current!r}. Map each part by name instead.")
    if id(current) in by_id:
        return by_id[id(current)]
    name = getattr(current, "name", "")
    name = name[:-2] if name.endswith(":0") else name
    if name in named_variables:
        return name
    raise ValueError(f"{current!r} is not one of the model's variables; map a variable of the "
                     f"model or its name (one of {sorted(named_variables)}).")


def _scope_targets(ckpt_name, current, named_variables, reader, ckpt_label):
    """`{model_name: ckpt_name}` for a scope mapping, with TF1's naming rules and errors."""
    scope = current[:current.rindex("/")] if "/" in current else ""
    if not ckpt_name.endswith("/"):
        raise ValueError(
            f"Assignment map with scope only name {scope} should map to scope only {ckpt_name}. "
            "Should be 'scope/': 'other_scope/'. (The model has no variable named "
            f"{current!r}, so it was read as a scope; check the name against the model's "
            "variables or map scope to scope.)")
    targets = {}
    for name in named_variables:
        if scope and not name.startswith(scope + "/"):
            continue
        full = name[len(scope):]
        if current != "/":
            full = full[1:]
        if ckpt_name != "/":
            full = ckpt_name + full
        full = full[:-1] if full.endswith("/") else full
        if not reader.has_tensor(full):
            raise ValueError(
                f"Tensor {full} ({name[len(scope) + 1:]} in {ckpt_name}) is not found in "
                f"{ckpt_label} checkpoint")
        targets[name] = full
    if not targets:
        _log.warning("init_from_checkpoint: scope mapping %r -> %r matched no variable.",
                     ckpt_name, current)
    return targets


def _check_in_checkpoint(ckpt_name, reader, ckpt_label):
    if not reader.has_tensor(ckpt_name):
        raise ValueError(
            f"Tensor {ckpt_name} is not found in {ckpt_label} checkpoint "
            f"{reader.get_variable_to_shape_map()}")


def _assign(ckpt, reader, pairs, named_variables):
    """Checks shapes/dtypes of all `(ckpt_name, model_name)` pairs, then assigns them all."""
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    for ckpt_name, name in pairs:
        variable = named_variables[name]
        if not variable.shape.is_compatible_with(shapes[ckpt_name]):
            raise ValueError(
                f"Shape of variable {name}:0 ({variable.shape}) doesn't match with shape of "
                f"tensor {ckpt_name} ({shapes[ckpt_name]}) from checkpoint reader.")
        if not checkpoints.dtypes_compatible(variable.dtype, dtypes[ckpt_name]):
            raise ValueError(
                f"Variable {name} has dtype {variable.dtype.name} but tensor {ckpt_name} in "
                f"checkpoint {ckpt} has dtype {dtypes[ckpt_name].name}; map it to a variable "
                "of the same kind of dtype.")
    ckpt_names = sorted({c for c, _ in pairs})
    values = dict(zip(ckpt_names, checkpoints.read_tensors(
        ckpt, ckpt_names, [dtypes[c] for c in ckpt_names])))
    checkpoints.assign_all([(named_variables[n], values[c]) for c, n in pairs])
