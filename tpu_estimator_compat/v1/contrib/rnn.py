"""`tf.contrib.rnn`: TF 1.x's core RNN cells (tf_keras' legacy `tf.nn.rnn_cell`, which keeps TF1
variable names such as `rnn/lstm_cell/kernel`), TensorFlow's static RNN functions, and
`stack_bidirectional_(dynamic_)rnn` and `LayerNormBasicLSTMCell` (`rebuilt_apis/contrib_rnn.py`).
contrib's other cells (`LSTMBlockCell`, `AttentionCellWrapper`...) are not provided."""
from tpu_estimator_compat.v1 import _lazy

_RNN_CELL = "tf_keras.api._v1.keras.__internal__.legacy.rnn_cell"
CELLS = ("RNNCell", "BasicRNNCell", "BasicLSTMCell", "GRUCell", "LSTMCell", "LSTMStateTuple",
         "DropoutWrapper", "MultiRNNCell", "DeviceWrapper", "ResidualWrapper")
_FUNCTIONS = ("static_rnn", "static_bidirectional_rnn", "static_state_saving_rnn")
_OWN = ("stack_bidirectional_rnn", "stack_bidirectional_dynamic_rnn", "LayerNormBasicLSTMCell")

_lazy.install(
    globals(),
    names={
        **{name: f"{_RNN_CELL}:{name}" for name in CELLS},
        "LayerRNNCell": "tf_keras.src.layers.rnn.legacy_cells:LayerRNNCell",
        **{name: f"tensorflow:compat.v1.nn.{name}" for name in _FUNCTIONS},
        "transpose_batch_time": "tensorflow.python.ops.rnn:_transpose_batch_time",
        "best_effort_input_batch_size": "tensorflow.python.ops.rnn:_best_effort_input_batch_size",
        **{name: f"tpu_estimator_compat.rebuilt_apis.contrib_rnn:{name}" for name in _OWN},
    },
    missing_hint=(". tpu_estimator_compat provides tf.contrib.rnn's core cells "
                  f"({', '.join(CELLS)}, LayerRNNCell), {', '.join(_FUNCTIONS + _OWN)}; "
                  "contrib's other cells are not provided."),
)
