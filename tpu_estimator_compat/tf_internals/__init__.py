"""The seam: every use of TensorFlow's private surface, in one place.

Only the modules here import `tensorflow.python`, `tensorflow.compiler`, `tensorflow.core`
or `tf_keras.src`, or touch a TensorFlow attribute whose name starts with `_`; the rest of
the package uses public TensorFlow and these modules' functions
(`tests/test_layer_boundaries.py` checks the imports, `tests/test_tf_internals.py` scans
for protected attributes; a subclass may call its TensorFlow base class's protected hooks,
`super()._apply_dense(...)`, when the ledger records them). Each module lists the private symbols it
uses in `SYMBOLS`, with the public behaviour each provides and the TensorFlow versions it
was checked on (2.21); `tests/test_tf_internals.py` checks that every one exists in the
installed TensorFlow, naming any that does not.

    graphs          step-graph copying, per-replica FuncGraph collections, eager mode in
                    graph-mode programs
    tensors         the TF1/TF2 switches of shapes and tensor equality, variables' `.op`,
                    v1 optimizer slot keys
    distribute      replica ids, `merge_call`, a TPUStrategy's device assignment,
                    `xla.replica_id`, `nest.flatten_up_to`
    data            TF1 Dataset wrapping, MultiDeviceIterator's per-device datasets
    training        SessionRunHooks' and Savers' private state, checkpoint and SavedModel
                    protos, moving averages, TF2 summary writers
    keras_and_slim  tf_keras's seed generators, tf-slim's repairs

The process-wide patches built on them are installed by one explicit call,
`tpu_estimator_compat.tf1_behaviour.process_patches.install()` (TPUEstimator / Estimator and the v1
namespace call it); the others are context managers active while the estimator runs the
user's code.
"""
