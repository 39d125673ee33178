"""TF1 lookup tables that model_fn builds (`index_table_from_tensor`, `HashTable`...).

TF1 filed each table's initializer in the graph's TABLE_INITIALIZERS collection, and the
Scaffold's init op ran `tables_initializer()` once per session, before the first step.
Here TensorFlow creates a table's resource under `init_scope`, so while the step is traced
(eagerly, `step_graph`) the table is made once, outside the step, and every copy of the
step in the device loop looks up in that one table; its initializer stays in the traced
graph, where no fetch needs it. `initialize` runs every replica's initializers once per
traced program, before any step (a table made in the loop body would be remade each step).

The original could not build such a table in a TPU program: model_fn ran inside the TPU
training loop (a while loop), out of which TensorFlow lifts the table and its initializer,
and the initializer's keys, made in the loop, cannot leave it ("Cannot use 'Const' as input
to '.../LookupTableImportV2' because 'Const' is in a while loop", whatever the keys' type).
Under TPU semantics `initialize` refuses the same way, before any step, naming the fix.
"""
import tensorflow as tf

from tpu_estimator_compat.engine import step_graph


def initialize(step, tpu_semantics):
    """Runs the table initializers the replicas' model_fn calls filed in `step`'s graph (a
    `step_graph.StepGraph`); raises a ValueError for them under TPU semantics."""
    # None: an initializer TensorFlow already ran eagerly (a table made in a control flow
    # context, e.g. by feature columns, is initialised under `init_scope`).
    initializers = [op for op in step.graph.collection_of_every_key(
        tf.compat.v1.GraphKeys.TABLE_INITIALIZERS) if op is not None]
    if not initializers:
        return
    if tpu_semantics:
        raise ValueError(
            f"model_fn built a lookup table (its initializer {initializers[0].name}), which a "
            "TPU program cannot have: the original TPUEstimator built model_fn inside the TPU "
            "training loop and failed there ('Cannot use ... as input to ... because ... is "
            "in a while loop'), and a TPU core does not run table lookups. Look the ids up "
            "in input_fn (build the table there and call table.lookup in dataset.map; tables "
            "in input_fn are initialised), or train with use_tpu=False.")
    try:
        step_graph.run_now(initializers)
    except ValueError as error:
        raise ValueError(
            f"A lookup table's initializer in model_fn is computed from the model's input "
            f"({error}): TF1 ran table initializers once, before any step, without input. "
            "Initialize the table from constants or a vocabulary file.") from None


# Ops making a table resource (the graph keeps them when model_fn fails after making one).
_TABLE_OPS = frozenset(("HashTable", "HashTableV2", "MutableHashTable", "MutableHashTableV2",
                        "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2",
                        "MutableDenseHashTable", "MutableDenseHashTableV2"))


def tpu_export_explained(build):
    """`build()` (building the export's TPU MetaGraph in the default graph); a ValueError it
    raises after model_fn made a lookup table there is raised again naming the fix (the
    original failed there too: "... must be from the same graph as ...", the table lifted
    out of the TPU function)."""
    try:
        return build()
    except ValueError as error:
        tables = [op for op in tf.compat.v1.get_default_graph().get_operations()
                  if op.type in _TABLE_OPS]
        if not tables:
            raise
        raise ValueError(
            f"model_fn built a lookup table ({tables[0].name}), which the TPU MetaGraph of "
            "the export cannot hold (a TPU core does not run table lookups; the original "
            "TPUEstimator failed here too). Export with TPUEstimator(..., "
            "export_to_tpu=False): the {serve} CPU MetaGraph serves the tables, initialised "
            f"when the SavedModel loads. ({error})") from error
